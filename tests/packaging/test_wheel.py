"""`pip install .` (not editable): the wheel holds every package of the source tree, and installs.

The wheel is built without build isolation (setuptools and wheel come from the dev extra), from a copy of
the repository: an in-tree build would leave build/ and *.egg-info behind, and a stale build/ can put
modules deleted since into a wheel. It is installed into a fresh virtualenv that sees the test
environment's third-party packages (a .pth line naming its site-packages) but not the editable install's
finder, so `import riverbeam.aws` there can only succeed from the wheel.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# every import package the distribution ships, and its source folder (a root that does not exist yet is
# left out; the pyproject's package discovery is what must find the others)
SOURCE_PACKAGES = {
    "riverbeam": ROOT / "layers" / "riverbeam" / "riverbeam",
    "beam_store": ROOT / "store" / "beam_store",
    "riverbeam_local": ROOT / "local" / "riverbeam_local",
}
# left out of the copy the wheel is built from: build output and caches anywhere, local state at the top
IGNORED_ANYWHERE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*_cache")
IGNORED_AT_TOP = {".git", "build", "dist", ".aws-sam", ".riverbeam"}


def ignored(folder: str, names: list[str]) -> set[str]:
    left_out = set(IGNORED_ANYWHERE(folder, names))
    if Path(folder) == ROOT:
        left_out |= {n for n in names if n in IGNORED_AT_TOP or n.startswith(".venv")}
    return left_out


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


def source_files() -> set[str]:
    """The files a wheel must hold, as wheel paths: every module and data file of each package."""
    found = set()
    for name, folder in SOURCE_PACKAGES.items():
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            relative = path.relative_to(folder)
            if path.is_file() and "__pycache__" not in relative.parts and path.suffix != ".pyc":
                found.add(f"{name}/{relative.as_posix()}")
    return found


def run(command: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    missing = [name for name in ("setuptools", "wheel") if importlib.util.find_spec(name) is None]
    assert not missing, f"{missing} missing: run `bash scripts/bootstrap` (the dev extra has them)"
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=ignored, symlinks=True)
    out = base / "dist"
    run(
        [
            *PIP,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        timeout=300,
    )
    (found,) = out.glob("riverbeam-*.whl")
    yield found


@pytest.mark.timeout(600)
def test_the_wheel_holds_every_package_module_and_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        (info,) = dist_info
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    shipped = {n for n in names if n.split("/")[0] not in dist_info}
    expected = source_files()
    assert {"riverbeam/aws/__init__.py", "riverbeam/py.typed", "beam_store/py.typed"} <= expected
    assert sorted(expected - shipped) == [], "left out of the wheel"
    assert sorted(shipped - expected) == [], "in the wheel but not in the source packages"
    assert "riverbeam = riverbeam_local.command:main" in entry_points


@pytest.mark.timeout(600)
def test_the_installed_wheel_imports_without_the_source_tree(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=60
        ).stdout.strip()
    )
    # the test environment's dependencies, without processing its .pth files (the editable finder)
    (purelib / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([*PIP, "install", "--no-deps", "--no-index", "--target", str(purelib), str(wheel)], timeout=120)
    modules = ["riverbeam", "riverbeam.aws", "riverbeam.tools", "beam_store", "beam_store.dynamo"]
    if SOURCE_PACKAGES["riverbeam_local"].is_dir():
        modules.append("riverbeam_local")
    probe = (
        f"import importlib, json; print(json.dumps([importlib.import_module(m).__file__ for m in {modules}]))"
    )
    files = json.loads(run([str(python), "-c", probe], timeout=120, cwd=tmp_path).stdout)
    assert all(Path(f).is_relative_to(purelib) for f in files), files
