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


def test_the_extension_counts_as_built_with_its_entry_and_install_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = load_hook()
    monkeypatch.setattr(hook, "LABEXTENSION_DIR", tmp_path)
    assert not hook.labextension_exists()
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "install.json").write_text("{}")
    assert not hook.labextension_exists()  # no entry point yet
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "remoteEntry.abc123.js").write_text("")
    assert hook.labextension_exists()


def test_skipping_the_js_build_needs_both_the_bundle_and_the_extension(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = load_hook()
    monkeypatch.setattr(hook, "LABEXTENSION_DIR", tmp_path)  # an extension never built
    monkeypatch.setenv("NETA_NB_SKIP_JS", "1")
    built: list[bool] = []
    monkeypatch.setattr(hook, "build_js", lambda: built.append(True))

    class App:
        def display_info(self, message: str) -> None:
            pass

    plugin = object.__new__(hook.CustomBuildHook)
    monkeypatch.setattr(hook.CustomBuildHook, "app", App(), raising=False)
    plugin.initialize("standard", {})
    assert built == [True]


def test_the_extension_lockfile_pins_jupyterlabs_builder_and_its_metadata() -> None:
    import json

    lock = json.loads((ROOT / "js" / "labextension" / "package-lock.json").read_text())
    packages = lock["packages"]
    for name in ("@jupyterlab/builder", "@jupyterlab/core-meta", "@jupyterlab/notebook",
                 "typescript"):
        assert packages[f"node_modules/{name}"]["version"], name
