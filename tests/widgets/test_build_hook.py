"""The hatch build hook that bundles js/ into neta_nb/static/."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_npm_fails_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = load_hook()
    monkeypatch.setattr(hook.shutil, "which", lambda name: None)
    with pytest.raises(hook.JsBuildError, match=r"needs Node\.js and npm"):
        hook.build_js()


def test_node_modules_are_stale_when_older_than_the_lockfile(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    hook = load_hook()
    monkeypatch.setattr(hook, "JS_DIR", tmp_path)
    (tmp_path / "package-lock.json").write_text("{}")
    assert hook.node_modules_stale()  # never installed
    marker = tmp_path / "node_modules" / ".package-lock.json"
    marker.parent.mkdir()
    marker.write_text("{}")
    lock_time = (tmp_path / "package-lock.json").stat().st_mtime
    os.utime(marker, (lock_time + 10, lock_time + 10))
    assert not hook.node_modules_stale()
    os.utime(marker, (lock_time - 10, lock_time - 10))
    assert hook.node_modules_stale()


def test_lockfile_pins_the_bundler_and_the_sanitizer() -> None:
    import json

    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())
    packages = lock["packages"]
    for name in ("esbuild", "typescript", "marked", "dompurify"):
        assert packages[f"node_modules/{name}"]["version"], name
