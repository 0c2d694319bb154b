"""Build the Riverbeam Lambda layer into TARGET/python/: the packages `riverbeam` (layers/riverbeam/riverbeam)
and `beam_store` (store/beam_store), and the dependencies of layers/riverbeam/requirements.txt but boto3 and
botocore, which the Lambda runtime has (with what only they need: urllib3, python-dateutil, s3transfer...).

sam build runs this through layers/riverbeam/Makefile (`build-RiverbeamLayer`) with TARGET=$(ARTIFACTS_DIR).
By default the dependencies are wheels for the Lambda runtime (CPython 3.12, manylinux x86_64), whatever
interpreter runs this; --current-interpreter installs them for the running interpreter instead (tests put
TARGET/python on sys.path as Lambda does). Needs pip (`python -m pip`); the repository is found from this
file's path, not from the working directory.
"""

from __future__ import annotations

import argparse
import csv
import email.message
import email.parser
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # an interpreter without `packaging` still has pip's copy of it
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "riverbeam": ROOT / "layers" / "riverbeam" / "riverbeam",
    "beam_store": ROOT / "store" / "beam_store",
}
REQUIREMENTS = ROOT / "layers" / "riverbeam" / "requirements.txt"
AGENTS_FILE = ROOT / "agents.yaml"
# in the Lambda runtime already; whatever only they pull in is left out too
RUNTIME_PROVIDED = frozenset({"boto3", "botocore"})
DEFAULT_PLATFORM = "manylinux2014_x86_64"


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("target", type=Path, help="the layer's root; TARGET/python is replaced")
    parser.add_argument(
        "--python-version", default="3.12", help="the runtime's Python, for its wheels (default: %(default)s)"
    )
    parser.add_argument(
        "--platform",
        action="append",
        help=f"a wheel platform tag, repeatable (default: {DEFAULT_PLATFORM})",
    )
    parser.add_argument("--no-deps", action="store_true", help="copy riverbeam and beam_store only")
    parser.add_argument(
        "--current-interpreter",
        action="store_true",
        help="install the dependencies for the running interpreter, not for the Lambda runtime",
    )
    args = parser.parse_args(argv)
    if args.platform is None:
        args.platform = [DEFAULT_PLATFORM]
    return args


def copy_packages(site: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
    for name, source in PACKAGES.items():
        if not (source / "__init__.py").is_file():
            raise SystemExit(f"build_layer: {source} is not a package")
        shutil.copytree(source, site / name, ignore=ignore)


def pip_install(site: Path, args: argparse.Namespace) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--no-compile",
        "--no-warn-conflicts",
        "--root-user-action=ignore",
        "--target",
        str(site),
        "--requirement",
        str(REQUIREMENTS),
    ]
    if not args.current_interpreter:
        command += ["--python-version", args.python_version, "--implementation", "cp", "--only-binary=:all:"]
        for platform in args.platform:
            command += ["--platform", platform]
    subprocess.run(command, check=True)


def marker_environment(args: argparse.Namespace) -> dict[str, str] | None:
    """The environment the dependencies' markers are evaluated in: the Lambda runtime's, or None (the
    running interpreter's)."""
    if args.current_interpreter:
        return None
    machine = "aarch64" if any("aarch64" in p for p in args.platform) else "x86_64"
    full_version = args.python_version if args.python_version.count(".") >= 2 else args.python_version + ".0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full_version,
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full_version,
        "python_version": ".".join(full_version.split(".")[:2]),
        "sys_platform": "linux",
    }


def metadata(info: Path) -> email.message.Message:
    text = (info / "METADATA").read_text(encoding="utf-8")
    return email.parser.Parser().parsestr(text, headersonly=True)


def installed(site: Path) -> dict[str, Path]:
    """The distributions pip put in `site`, by canonical name: their .dist-info directories."""
    return {canonical(metadata(info)["Name"]): info for info in site.glob("*.dist-info")}


def requires(info: Path) -> list[str]:
    return metadata(info).get_all("Requires-Dist") or []


def root_requirements() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def needed(dists: Mapping[str, Path], environment: dict[str, str] | None) -> set[str]:
    """The installed distributions the requirements reach without going through boto3/botocore."""

    def applies(requirement: Requirement, extras: Iterable[str]) -> bool:
        if requirement.marker is None:
            return True
        for extra in ("", *extras):
            env = {**(environment or {}), "extra": extra}
            if requirement.marker.evaluate(env):
                return True
        return False

    keep: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [r for r in map(Requirement, root_requirements()) if applies(r, ())]
    while todo:
        requirement = todo.pop()
        name = canonical(requirement.name)
        key = (name, frozenset(requirement.extras))
        if name in RUNTIME_PROVIDED or name not in dists or key in seen:
            continue
        seen.add(key)
        keep.add(name)
        for line in requires(dists[name]):
            dependency = Requirement(line)
            if applies(dependency, requirement.extras):
                todo.append(dependency)
    return keep


def remove_distribution(site: Path, info: Path) -> None:
    """Delete what a distribution installed (its RECORD), then its .dist-info."""
    record = info / "RECORD"
    if record.is_file():
        for row in csv.reader(record.read_text(encoding="utf-8").splitlines()):
            path = (site / row[0]).resolve()
            if path.is_file() and path.is_relative_to(site):
                path.unlink()
    shutil.rmtree(info, ignore_errors=True)


def prune(site: Path) -> None:
    """No byte code, no console scripts (nothing runs them in a layer), no empty directories."""
    for cache in sorted(site.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)
    for compiled in site.rglob("*.py[co]"):
        compiled.unlink()
    shutil.rmtree(site / "bin", ignore_errors=True)
    directories = sorted((p for p in site.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for directory in directories:
        if not any(directory.iterdir()):
            directory.rmdir()


def build(args: argparse.Namespace) -> Path:
    target: Path = args.target
    site = (target / "python").resolve()
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    if not args.no_deps:
        pip_install(site, args)
        dists = installed(site)
        keep = needed(dists, marker_environment(args))
        for name in sorted(set(dists) - keep):
            remove_distribution(site, dists[name])
        left = RUNTIME_PROVIDED & set(installed(site))
        if left:
            raise SystemExit(f"build_layer: {', '.join(sorted(left))} still in the layer")
    copy_packages(site)
    prune(site)
    # the deployment's agents, at the layer's root: /opt/agents.yaml once Lambda mounts it
    shutil.copyfile(AGENTS_FILE, target / "agents.yaml")
    return site


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    site = build(args)
    names = sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info"))
    print(f"build_layer: {site}: {' '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
