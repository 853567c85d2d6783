"""Hatch build hook: bundles the widget JS (js/) into neta_nb/static/ for every build.

Runs for wheels, sdists' wheels and editable installs (``pip install -e .``). It installs the
locked npm dependencies with ``npm ci`` when ``js/node_modules`` is missing or older than
``js/package-lock.json``, then runs the bundler (which type-checks first). Set
``NETA_NB_SKIP_JS=1`` to skip the JS build when a bundle already exists (for example in a
Python-only edit loop, or when installing from an sdist that ships the bundle).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).parent
JS_DIR = ROOT / "js"
STATIC_DIR = ROOT / "neta_nb" / "static"
BUNDLE_FILES = ("widgets.js", "widgets.css", "loader.js")


class JsBuildError(RuntimeError):
    """The widget bundle could not be built; the message says what to do."""


def bundle_exists() -> bool:
    return all((STATIC_DIR / name).is_file() for name in BUNDLE_FILES)


def node_modules_stale() -> bool:
    marker = JS_DIR / "node_modules" / ".package-lock.json"
    lockfile = JS_DIR / "package-lock.json"
    return not marker.is_file() or marker.stat().st_mtime < lockfile.stat().st_mtime


def build_js() -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise JsBuildError(
            "neta_nb: building the widget bundle needs Node.js and npm (node >= 18), which "
            "were not found on PATH. Install them (e.g. `apt-get install nodejs npm`), or set "
            "NETA_NB_SKIP_JS=1 if neta_nb/static/widgets.js is already built."
        )
    if node_modules_stale():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, check=True)
    subprocess.run([npm, "run", "build"], cwd=JS_DIR, check=True)
    if not bundle_exists():
        raise JsBuildError(f"neta_nb: the JS build ran but {STATIC_DIR} lacks {BUNDLE_FILES}")


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("NETA_NB_SKIP_JS") == "1" and bundle_exists():
            self.app.display_info("neta_nb: NETA_NB_SKIP_JS=1, using the existing widget bundle")
            return
        if not (JS_DIR / "package.json").is_file():
            # An sdist unpacked without js/ must carry the bundle instead.
            if bundle_exists():
                return
            raise JsBuildError("neta_nb: neither js/ sources nor a built bundle were found")
        self.app.display_info("neta_nb: building the widget bundle (js/ -> neta_nb/static/)")
        try:
            build_js()
        except subprocess.CalledProcessError as error:
            raise JsBuildError(
                f"neta_nb: the widget JS build failed ({' '.join(map(str, error.cmd))} exited "
                f"with {error.returncode}); see the output above"
            ) from error
