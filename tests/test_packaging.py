"""What the wheel and the sdist carry: the package, the widget bundle, the JupyterLab
extension (as shared data, where JupyterLab finds prebuilt extensions) and the demo notebooks
with their data, and never the checkpoints JupyterLab leaves beside a notebook it opened
(building after running the demo used to ship them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from neta_nb.cli import demo_notebooks_source

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ("widgets.js", "widgets.css", "loader.js")
EXTENSION = "neta-nb-notebook-bridge"
LABEXTENSIONS = f"neta_nb-0.1.0.data/data/share/jupyter/labextensions/{EXTENSION}/"
# Not part of a source tree someone would build from: caches, environments, build output.
# (`.venv*`: the test command's environments, the demo's too — half a gigabyte each.)
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", "node_modules", "__pycache__", "*.egg-info", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".import_linter_cache", ".hypothesis", "artifacts",
    "dist", "build", ".ipynb_checkpoints")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the source tree after a demo run: JupyterLab's checkpoints beside the
    notebooks and beside the data file the agent read."""
    copy = tmp_path_factory.mktemp("project") / "neta_nb"
    shutil.copytree(ROOT, copy, ignore=_NOT_SOURCES)
    for folder, name in (("notebooks", "01_quickstart-checkpoint.ipynb"),
                         ("notebooks/data", "sales-checkpoint.csv")):
        checkpoints = copy / folder / ".ipynb_checkpoints"
        checkpoints.mkdir()
        (checkpoints / name).write_text("{}")
    # The widget bundle is build output (npm); the checkout's own is used when it has one.
    # This test is about which files are selected, so without one a marked stand-in will do.
    static = copy / "neta_nb" / "static"
    for name in BUNDLE:
        built = ROOT / "neta_nb" / "static" / name
        if built.is_file():
            shutil.copy2(built, static / name)
        else:
            (static / name).write_text("/* stand-in: the packaging test selects files */\n")
    labextension = copy / "neta_nb" / "labextension"
    if not (ROOT / "neta_nb" / "labextension" / "package.json").is_file():
        (labextension / "static").mkdir(parents=True)
        (labextension / "package.json").write_text(f'{{"name": "{EXTENSION}"}}\n')
        shutil.copy2(ROOT / "js" / "labextension" / "install.json", labextension)
        (labextension / "static" / "remoteEntry.0.js").write_text("/* stand-in */\n")
    return copy


def _build(project: Path, kind: str, into: Path) -> Path:
    """Build with the project's own backend (hatchling, as pip would call it), offline."""
    into.mkdir()
    code = f"import hatchling.build as b; print(b.build_{kind}({str(into)!r}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True,
                            text=True, env={**os.environ, "NETA_NB_SKIP_JS": "1"},
                            check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    return into / result.stdout.strip().splitlines()[-1]


def _expected_notebook_files() -> set[str]:
    source, _ = demo_notebooks_source()
    return {file.relative_to(source).as_posix() for file in source.rglob("*")
            if file.is_file() and ".ipynb_checkpoints" not in file.parts}


def test_the_wheel_ships_the_notebooks_without_checkpoints(project: Path,
                                                           tmp_path: Path) -> None:
    wheel = _build(project, "wheel", tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if ".ipynb_checkpoints" in name]
    prefix = "neta_nb/_notebooks/"
    shipped = {name.removeprefix(prefix) for name in names if name.startswith(prefix)}
    assert shipped == _expected_notebook_files()
    assert {"01_quickstart.ipynb", "data/sales.csv"} <= shipped
    assert {f"neta_nb/static/{name}" for name in BUNDLE} <= set(names)
    assert "neta_nb/cli.py" in names and "neta_nb/labels.json" in names
    # `neta-nb lab`'s JupyterLab page config (no news toast), installed from a wheel too.
    assert "neta_nb/demo_lab/labconfig/page_config.json" in names
    assert not [name for name in names if name.startswith(("notebooks/", "tests/", "js/"))]


def test_the_wheel_installs_the_jupyterlab_extension(project: Path, tmp_path: Path) -> None:
    wheel = zipfile.ZipFile(_build(project, "wheel", tmp_path / "dist"))
    shipped = {name.removeprefix(LABEXTENSIONS) for name in wheel.namelist()
               if name.startswith(LABEXTENSIONS)}
    assert {"package.json", "install.json"} <= shipped
    assert [name for name in shipped if name.startswith("static/remoteEntry.")
            and name.endswith(".js")]
    package = json.loads(wheel.read(LABEXTENSIONS + "package.json"))
    assert package["name"] == EXTENSION
    install = json.loads(wheel.read(LABEXTENSIONS + "install.json"))
    assert install == {"packageManager": "python", "packageName": "neta-nb",
                       "uninstallInstructions": "Use your Python package manager (pip, conda, "
                                                "etc.) to uninstall the package neta-nb"}


def test_the_sdist_has_no_checkpoints(project: Path, tmp_path: Path) -> None:
    sdist = _build(project, "sdist", tmp_path / "dist")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert not [name for name in names if ".ipynb_checkpoints" in name]
    assert any(name.endswith("/notebooks/01_quickstart.ipynb") for name in names)
