"""Hatch build hook: builds the JS of every build.

* the widget bundle (js/ -> neta_nb/static/), and
* the JupyterLab / Notebook 7 extension (js/labextension/ -> neta_nb/labextension/), which
  the wheel installs as ``share/jupyter/labextensions/neta-nb-notebook-bridge`` (pyproject's
  shared-data), so ``pip install neta-nb`` enables it with no other step.

Runs for wheels, sdists' wheels and editable installs (``pip install -e .``). For each
package it installs the locked npm dependencies with ``npm ci`` when its ``node_modules`` is
missing or older than its ``package-lock.json``, then runs its build (which type-checks
first). Set ``NETA_NB_SKIP_JS=1`` to skip the JS build when both outputs already exist (for
example in a Python-only edit loop, or when installing from an sdist that ships them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).parent
JS_DIR = ROOT / "js"
STATIC_DIR = ROOT / "neta_nb" / "static"
BUNDLE_FILES = ("widgets.js", "widgets.css", "loader.js")
LABEXTENSION_JS_DIR = JS_DIR / "labextension"
LABEXTENSION_DIR = ROOT / "neta_nb" / "labextension"


class JsBuildError(RuntimeError):
    """The widget bundle could not be built; the message says what to do."""


def bundle_exists() -> bool:
    return all((STATIC_DIR / name).is_file() for name in BUNDLE_FILES)


def labextension_exists() -> bool:
    """The built extension: its package.json (naming its entry), the entry and install.json."""
    package = LABEXTENSION_DIR / "package.json"
    return (package.is_file() and (LABEXTENSION_DIR / "install.json").is_file()
            and any((LABEXTENSION_DIR / "static").glob("remoteEntry.*.js")))


def js_built() -> bool:
    return bundle_exists() and labextension_exists()


def node_modules_stale(package_dir: Path | None = None) -> bool:
    """``node_modules`` of ``package_dir`` (default js/) is missing or older than its lock."""
    package_dir = JS_DIR if package_dir is None else package_dir
    marker = package_dir / "node_modules" / ".package-lock.json"
    lockfile = package_dir / "package-lock.json"
    return not marker.is_file() or marker.stat().st_mtime < lockfile.stat().st_mtime


def npm_build(npm: str, package_dir: Path) -> None:
    """``npm ci`` when ``node_modules`` is stale, then ``npm run build``, in ``package_dir``."""
    if node_modules_stale(package_dir):
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=package_dir, check=True)
    subprocess.run([npm, "run", "build"], cwd=package_dir, check=True)


def build_js() -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise JsBuildError(
            "neta_nb: building the widget bundle and the JupyterLab extension needs Node.js "
            "and npm (node >= 18), which were not found on PATH. Install them (e.g. `apt-get "
            "install nodejs npm`), or set NETA_NB_SKIP_JS=1 if neta_nb/static/widgets.js and "
            "neta_nb/labextension/ are already built."
        )
    npm_build(npm, JS_DIR)
    if not bundle_exists():
        raise JsBuildError(f"neta_nb: the JS build ran but {STATIC_DIR} lacks {BUNDLE_FILES}")
    npm_build(npm, LABEXTENSION_JS_DIR)
    if not labextension_exists():
        raise JsBuildError(f"neta_nb: the extension build ran but {LABEXTENSION_DIR} lacks "
                           "package.json, install.json or static/remoteEntry.*.js")


def build_unless_skipped(say: Callable[[str], None]) -> None:
    """The JS build of an install: skipped with ``NETA_NB_SKIP_JS=1`` when both outputs
    exist, refused when there is neither a source nor a built form, else run."""
    if os.environ.get("NETA_NB_SKIP_JS") == "1" and js_built():
        say("neta_nb: NETA_NB_SKIP_JS=1, using the existing widget bundle and JupyterLab "
            "extension")
        return
    if not (JS_DIR / "package.json").is_file():
        # An sdist unpacked without js/ must carry the built JS instead.
        if js_built():
            return
        raise JsBuildError("neta_nb: neither js/ sources nor the built bundle and "
                           "extension were found")
    say("neta_nb: building the widget bundle (js/ -> neta_nb/static/) and the JupyterLab "
        "extension (js/labextension/ -> neta_nb/labextension/)")
    try:
        build_js()
    except subprocess.CalledProcessError as error:
        raise JsBuildError(
            f"neta_nb: the widget JS build failed ({' '.join(map(str, error.cmd))} exited "
            f"with {error.returncode}); see the output above"
        ) from error


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        build_unless_skipped(self.app.display_info)


if __name__ == "__main__":
    # `python hatch_build.py`: the same build on its own, so that an install script shows
    # it as a step of its own before pip runs (scripts/_setup.sh), then passes
    # NETA_NB_SKIP_JS=1 to pip.
    build_unless_skipped(print)
