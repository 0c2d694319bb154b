"""Build one of Riverbeam's Lambda layers into TARGET/python/.

--layer riverbeam (the default): the packages `riverbeam` (layers/riverbeam/riverbeam) and `beam_store`
(store/beam_store), and the dependencies of layers/riverbeam/requirements.txt but boto3 and botocore, which
the Lambda runtime has (with what only they need: urllib3, python-dateutil, s3transfer...); agents.yaml at
TARGET as agents.json: the same document, read by PyYAML here once, so that no cold start imports PyYAML
(~40 ms of CPU) to read it (json is imported by botocore anyway). A file that is not YAML fails the build.
Each agent's `policy:` file is checked with Cedar (a file that does not parse fails the build, naming the
file and the line) and shipped beside agents.json (scripts/agent_policies.py).
Your own code, the folder agents.yaml names as `code` (agent_code/ by default), is copied into python/ beside
riverbeam, so its `module:function` tools import in Lambda (scripts/agent_code.py).
--layer tokens: the dependencies of layers/tokens/requirements.txt (PyJWT, `cryptography`), for the one
function that verifies tokens ($connect); every other function goes without them.
--layer policy: the dependencies of layers/policy/requirements.txt (cedarpy), for the functions that run
agents and so decide their tool calls (invoke, worker); imported there only when an agent has a policy.
--layer mcp: the dependencies of layers/mcp/requirements.txt (the `mcp` package and what it brings), for the
functions that run agents or check a tool's args (invoke, resume, worker); imported there only when an
agent names an MCP server.
--layer git: the dependencies of layers/git/requirements.txt (dulwich), for the same functions: the
built-in git tools import it at their first call.
--layer slack: slack-sdk, for the two Slack functions only (riverbeam.channels imports it there).
--layer pydantic_ai, langgraph, openai_agents, strands: a framework's packages (layers/<framework>/
requirements.txt) and dulwich, for the same functions, in the git layer's place, where the deployment's
AgentFramework names it: riverbeam.frameworks imports them only where an agent of agents.yaml uses it.
Each carries its runner's modules of riverbeam.frameworks (riverbeam/frameworks/<framework>*.py), which the
Riverbeam layer leaves out: Lambda merges the layers into one /opt/python, where the package finds them.

sam build runs this through each layer's Makefile (layers/<name>/Makefile) with TARGET=$(ARTIFACTS_DIR).
By default the dependencies are wheels for the Lambda runtime (CPython 3.12, manylinux x86_64), whatever
interpreter runs this; --current-interpreter installs them for the running interpreter instead (tests put
TARGET/python on sys.path as Lambda does). Needs pip (`python -m pip`); the repository is found from this
file's path, not from the working directory.

Byte code: Lambda mounts a layer read-only at /opt, so Python cannot cache what it compiles there and a layer
without byte code is compiled again on every cold start. The layer therefore ships byte code compiled by the
runtime's interpreter (python3.12 from pyenv or PATH; the running one with --current-interpreter), as
unchecked-hash pycs, which Python loads without comparing them with their sources (whose mtimes a zip and
Lambda's extraction need not keep):
- the layer's own packages (riverbeam, beam_store) keep their sources, with `__pycache__/*.cpython-312.pyc`;
- the dependencies ship each module as its byte code alone (`module.pyc` in place of `module.py`, which
  Python imports as it would the source): their sources would take the layer over its 5 MB (zipped) goal,
  and cost only the source lines in a traceback through them (--keep-sources keeps them, for debugging);
- NO_BYTECODE's modules, which no handler imports, keep their sources and no byte code.
Without that interpreter the layer ships sources only, and says so. The layer also leaves out files no
Riverbeam code path reads (LEFT_OUT), and strips debug sections from shared libraries.
"""

from __future__ import annotations

import argparse
import csv
import email.message
import email.parser
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # an interpreter without `packaging` still has pip's copy of it
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Layer:
    requirements: Path
    # the project's own packages, copied from the source tree
    packages: Mapping[str, Path] = field(default_factory=dict)
    # the deployment's agents, at the layer's root as JSON: /opt/agents.json once Lambda mounts it
    agents_file: Path | None = None
    # a layer listed before this one on every function that has this one (the Riverbeam layer): what its
    # requirements reach is left out here. Lambda extracts a function's layers into /opt in order, so a second
    # copy of pydantic (or typing-extensions, opentelemetry-api) would overwrite the first one's files
    beside: tuple[Path, ...] = ()
    # a framework's layer: the runner's modules of riverbeam.frameworks whose names start so (the Riverbeam
    # layer leaves them out: Lambda merges the layers' python/ folders, so the package finds them there)
    runner_modules: str | None = None


RIVERBEAM_REQUIREMENTS = ROOT / "layers" / "riverbeam" / "requirements.txt"
# a framework's layer follows the MCP layer on every function that has it: what MCP's brings is not copied
MCP = ROOT / "layers" / "mcp" / "requirements.txt"
LAYERS = {
    "riverbeam": Layer(
        requirements=RIVERBEAM_REQUIREMENTS,
        packages={
            "riverbeam": ROOT / "layers" / "riverbeam" / "riverbeam",
            "beam_store": ROOT / "store" / "beam_store",
        },
        agents_file=ROOT / "agents.yaml",
    ),
    "tokens": Layer(
        requirements=ROOT / "layers" / "tokens" / "requirements.txt", beside=(RIVERBEAM_REQUIREMENTS,)
    ),
    "policy": Layer(
        requirements=ROOT / "layers" / "policy" / "requirements.txt", beside=(RIVERBEAM_REQUIREMENTS,)
    ),
    "mcp": Layer(requirements=MCP, beside=(RIVERBEAM_REQUIREMENTS,)),
    "git": Layer(requirements=ROOT / "layers" / "git" / "requirements.txt", beside=(RIVERBEAM_REQUIREMENTS,)),
    "slack": Layer(
        requirements=ROOT / "layers" / "slack" / "requirements.txt", beside=(RIVERBEAM_REQUIREMENTS,)
    ),
    "pydantic_ai": Layer(
        requirements=ROOT / "layers" / "pydantic_ai" / "requirements.txt",
        beside=(RIVERBEAM_REQUIREMENTS, MCP),
        runner_modules="pydantic_ai",
    ),
    "langgraph": Layer(
        requirements=ROOT / "layers" / "langgraph" / "requirements.txt",
        beside=(RIVERBEAM_REQUIREMENTS, MCP),
        runner_modules="langgraph",
    ),
    "openai_agents": Layer(
        requirements=ROOT / "layers" / "openai_agents" / "requirements.txt",
        beside=(RIVERBEAM_REQUIREMENTS, MCP),
        runner_modules="openai_agents",
    ),
    "strands": Layer(
        requirements=ROOT / "layers" / "strands" / "requirements.txt",
        beside=(RIVERBEAM_REQUIREMENTS, MCP),
        runner_modules="strands",
    ),
}
# in the Lambda runtime already; whatever only they pull in is left out too (urllib3, botocore's, is also
# dulwich's: the runtime's serves both)
RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "urllib3"})
DEFAULT_PLATFORM = "manylinux2014_x86_64"
# What the installed distributions carry that no Riverbeam code path loads: left out of the layer (globs
# under python/). Removing more than this (unused Powertools utilities, say) would reach into what a later
# change may start to use; these are files that only an unused option or a type checker reads.
LEFT_OUT = (
    # PyYAML's libyaml binding (2.8 MB unzipped): riverbeam reads agents.yaml with yaml.safe_load, the pure
    # Python loader; without the binding yaml.__with_libyaml__ is False and `import yaml` loads no library
    "_yaml",
    "yaml/_yaml.*",
    # Powertools' Swagger UI, served only by the resolver's enable_swagger(), which riverbeam never calls
    "aws_lambda_powertools/event_handler/openapi/swagger_ui/*.js",
    "aws_lambda_powertools/event_handler/openapi/swagger_ui/*.css",
    # dulwich's command line, servers and tests: the git tools use it as a library (repo, client, porcelain)
    "dulwich/cli.*",
    "dulwich/__main__.*",
    "dulwich/web.*",
    "dulwich/lfs_server.*",
    "dulwich/aiohttp",
    "dulwich/cloud",
    "dulwich/tests",
    # type stubs and C sources: read by type checkers and compilers, never at run time
    "*-stubs",
    "**/*.pyi",
    "**/*.c",
    "**/*.h",
)
# Shipped as sources, without byte code: modules no handler imports (pydantic's V1 API is imported only
# for a legacy `__get_validators__` type, its mypy plugin by mypy, its experimental API by nobody here; the
# Powertools utilities riverbeam does not use). Should a handler import one, it compiles it in memory at that
# import, once per container, and still works.
NO_BYTECODE = (
    "pydantic/v1/",
    "pydantic/mypy.py",
    "pydantic/experimental/",
    "aws_lambda_powertools/utilities/auth_alpha/",
    "aws_lambda_powertools/utilities/circuit_breaker/",
    "aws_lambda_powertools/utilities/data_masking/",
    "aws_lambda_powertools/utilities/feature_flags/",
    "aws_lambda_powertools/utilities/idempotency/",
    "aws_lambda_powertools/utilities/parameters/",
    "aws_lambda_powertools/utilities/streaming/",
)


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("target", type=Path, help="the layer's root; TARGET/python is replaced")
    parser.add_argument(
        "--layer", choices=sorted(LAYERS), default="riverbeam", help="which layer (default: %(default)s)"
    )
    parser.add_argument(
        "--python-version", default="3.12", help="the runtime's Python, for its wheels (default: %(default)s)"
    )
    parser.add_argument(
        "--platform",
        action="append",
        help=f"a wheel platform tag, repeatable (default: {DEFAULT_PLATFORM})",
    )
    parser.add_argument("--no-deps", action="store_true", help="copy the layer's own packages only")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="ship sources only (a layer compiled at every cold start)"
    )
    parser.add_argument(
        "--keep-sources",
        action="store_true",
        help="keep the dependencies' sources beside their byte code (source lines in tracebacks; larger)",
    )
    parser.add_argument(
        "--current-interpreter",
        action="store_true",
        help="install the dependencies for the running interpreter, not for the Lambda runtime",
    )
    args = parser.parse_args(argv)
    if args.platform is None:
        args.platform = [DEFAULT_PLATFORM]
    return args


FRAMEWORKS = ROOT / "layers" / "riverbeam" / "riverbeam" / "frameworks"


def copy_packages(site: Path, layer: Layer) -> None:
    for name, source in layer.packages.items():
        if not (source / "__init__.py").is_file():
            raise SystemExit(f"build_layer: {source} is not a package")
        shutil.copytree(source, site / name, ignore=_not_shipped)
    if layer.runner_modules is not None:
        found = sorted(FRAMEWORKS.glob(f"{layer.runner_modules}*.py"))
        if not found:
            raise SystemExit(f"build_layer: no runner modules {layer.runner_modules}*.py in {FRAMEWORKS}")
        (site / "riverbeam" / "frameworks").mkdir(parents=True)
        for module in found:
            shutil.copy(module, site / "riverbeam" / "frameworks" / module.name)


def _not_shipped(folder: str, names: list[str]) -> set[str]:
    """Byte code of the tree (made afresh), and the frameworks' runners (each in its framework's layer)."""
    left = {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}
    if Path(folder).resolve() == FRAMEWORKS.resolve():
        runners = tuple(f"{layer.runner_modules}" for layer in LAYERS.values() if layer.runner_modules)
        left |= {n for n in names if n.startswith(runners)}
    return left


def pip_install(site: Path, layer: Layer, args: argparse.Namespace) -> None:
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
        str(layer.requirements),
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


def root_requirements(requirements: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in requirements.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def needed(dists: Mapping[str, Path], environment: dict[str, str] | None, requirements: Path) -> set[str]:
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
    todo = [r for r in map(Requirement, root_requirements(requirements)) if applies(r, ())]
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


def leave_out(site: Path) -> None:
    """Delete what LEFT_OUT names (files no Riverbeam code path loads)."""
    for pattern in LEFT_OUT:
        for path in sorted(site.glob(pattern), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()


def strip_debug_symbols(site: Path, args: argparse.Namespace) -> None:
    """`strip --strip-debug` the shared libraries (wrapt's comes with 0.5 MB of DWARF); skipped without
    binutils' strip or for another machine's libraries. Only debug sections go: symbols stay."""
    strip = shutil.which("strip")
    target_machine = "aarch64" if any("aarch64" in p for p in args.platform) else "x86_64"
    if strip is None or (not args.current_interpreter and target_machine != platform.machine()):
        return
    for library in sorted(site.rglob("*.so")):
        subprocess.run([strip, "--strip-debug", str(library)], check=False, capture_output=True)


def runtime_interpreter(args: argparse.Namespace) -> str | None:
    """The interpreter whose byte code the layer ships: the running one with --current-interpreter, else a
    python<version> that really is that version (the running one, pyenv's, python<version> on PATH)."""
    if args.current_interpreter:
        return sys.executable
    version = ".".join(args.python_version.split(".")[:2])
    candidates = [sys.executable]
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        listed = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True, check=False)
        matching = [v for v in listed.stdout.split() if v == version or v.startswith(version + ".")]
        oldest_first = sorted(matching, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")])
        for name in reversed(oldest_first):
            prefix = subprocess.run([pyenv, "prefix", name], capture_output=True, text=True, check=False)
            if prefix.returncode == 0 and prefix.stdout.strip():
                candidates.append(str(Path(prefix.stdout.strip()) / "bin" / f"python{version}"))
    on_path = shutil.which(f"python{version}")
    if on_path is not None:
        candidates.append(on_path)
    for candidate in candidates:
        try:
            answer = subprocess.run(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
        except OSError:
            continue
        if answer.returncode == 0 and answer.stdout.strip() == version:
            return candidate
    return None


def compile_bytecode(site: Path, interpreter: str, own: Iterable[str], keep_sources: bool) -> None:
    """Byte code for `interpreter`, as unchecked-hash pycs (loaded without a look at their sources):
    the layer's own packages (`own`) keep their sources, with their pycs in __pycache__/; every other module
    but NO_BYTECODE's is shipped as its pyc alone, in its source's place (unless `keep_sources`)."""
    mine = [site / name for name in own if (site / name).exists()]
    dependencies = [
        p for p in site.iterdir() if p not in mine and not p.name.endswith((".dist-info", ".data"))
    ]
    excluded = "|".join(re.escape(os.sep + part.replace("/", os.sep)) for part in NO_BYTECODE)
    command = [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    # compileall reads SOURCE_DATE_EPOCH only for its default mode (the mode is given): dropped all the same
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "SOURCE_DATE_EPOCH")}
    runs = [(command, mine)]
    if dependencies:
        runs.append(([*command, *([] if keep_sources else ["-b"]), "-x", excluded], dependencies))
    for arguments, paths in runs:
        if not paths:
            continue
        done = subprocess.run([*arguments, *map(str, paths)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            # a file this Python cannot compile (another version's module, say) keeps its source only
            print(
                f"build_layer: {interpreter} could not compile some files (they ship as sources):\n"
                f"{done.stdout}{done.stderr}",
                file=sys.stderr,
            )
    if keep_sources:
        return
    for compiled in site.rglob("*.pyc"):
        source = compiled.with_suffix(".py")
        if compiled.parent.name != "__pycache__" and source.is_file():
            source.unlink()


def build(args: argparse.Namespace) -> Path:
    layer = LAYERS[args.layer]
    target: Path = args.target
    site = (target / "python").resolve()
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    if not args.no_deps:
        pip_install(site, layer, args)
        dists = installed(site)
        keep = needed(dists, marker_environment(args), layer.requirements)
        for beside in layer.beside:  # the Riverbeam layer's own, from the same index: not twice in /opt
            keep -= needed(dists, marker_environment(args), beside)
        for name in sorted(set(dists) - keep):
            remove_distribution(site, dists[name])
        left = RUNTIME_PROVIDED & set(installed(site))
        if left:
            raise SystemExit(f"build_layer: {', '.join(sorted(left))} still in the layer")
    copy_packages(site, layer)
    own = list(layer.packages) + (["riverbeam"] if layer.runner_modules is not None else [])
    if layer.agents_file is not None:  # before byte code: the layer's PyYAML is still its sources
        write_agents_json(layer.agents_file, target, site)
        ship_agent_policies(layer.agents_file, target)
        # your own code keeps its sources, as riverbeam does
        own += ship_agent_code(layer.agents_file, target / "agents.json", site)
    prune(site)
    leave_out(site)
    strip_debug_symbols(site, args)
    if not args.no_bytecode:
        interpreter = runtime_interpreter(args)
        if interpreter is None:
            print(
                f"build_layer: no Python {args.python_version} found (pyenv, python{args.python_version} on"
                " PATH): the layer ships without byte code, compiled again at every cold start",
                file=sys.stderr,
            )
        else:
            compile_bytecode(site, interpreter, own, args.keep_sources)
    return site


# the layer's own PyYAML (pure Python, so any Python 3 reads it), else the running interpreter's
TO_JSON = """
import json, sys, yaml
with open(sys.argv[1], encoding="utf-8") as source:
    document = yaml.safe_load(source)
with open(sys.argv[2], "w", encoding="utf-8") as written:
    json.dump(document, written, indent=1, ensure_ascii=False)
    written.write("\\n")
"""


def ship_agent_code(agents_file: Path, agents_json: Path, site: Path) -> list[str]:
    """The folder of your own code agents.yaml names (agent_code/ by default), in the layer
    (scripts/agent_code.py); what it put there."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agent_code import ship_agent_code as ship

    return ship(agents_file, agents_json, site)


def ship_agent_policies(agents_file: Path, target: Path) -> None:
    """The policy files agents.yaml names, checked and beside agents.json (scripts/agent_policies.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agent_policies import ship_policies

    ship_policies(agents_file, target)


def write_agents_json(source: Path, target: Path, site: Path) -> None:
    """`source` (YAML) as TARGET/agents.json; SystemExit naming the file if it is not YAML."""
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [sys.executable, "-c", TO_JSON, str(source), str(target / "agents.json")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"build_layer: {source} could not be read as YAML:\n{done.stderr[-2000:]}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    site = build(args)
    names = sorted(p.name for p in site.iterdir() if not p.name.endswith((".dist-info", "__pycache__")))
    compiled = sum(1 for _ in site.rglob("*.pyc"))
    print(f"build_layer: {site}: {' '.join(names)} ({compiled} modules compiled)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
