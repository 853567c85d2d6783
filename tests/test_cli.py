"""The ``neta-nb`` command: help for every subcommand, copying without overwriting, the
JupyterLab command it runs, and the message when JupyterLab is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neta_nb import cli


def test_help_for_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["lab", "--help"], ["notebooks", "--help"]):
        with pytest.raises(SystemExit) as stop:
            cli.main(argv)
        assert stop.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: neta-nb")
    with pytest.raises(SystemExit) as stop:
        cli.main([])
    assert stop.value.code == 2  # a subcommand is required


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("neta-nb")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                            check=True)
    assert result.stdout.startswith("neta-nb ")


def test_copy_never_overwrites_user_edits(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "data").mkdir(parents=True)
    (source / "01_quickstart.ipynb").write_text("original")
    (source / "data" / "x.csv").write_text("a,b")
    (source / ".ipynb_checkpoints").mkdir()
    (source / ".ipynb_checkpoints" / "junk.ipynb").write_text("junk")
    target = tmp_path / "user"
    copied = cli.copy_notebooks(source, target)
    assert sorted(p.relative_to(target).as_posix() for p in copied) == [
        "01_quickstart.ipynb", "data/x.csv"]
    (target / "01_quickstart.ipynb").write_text("my edits")
    (source / "01_quickstart.ipynb").write_text("new release")
    assert cli.copy_notebooks(source, target) == []
    assert (target / "01_quickstart.ipynb").read_text() == "my edits"


def test_lab_uses_the_checkout_in_place(capsys: pytest.CaptureFixture[str]) -> None:
    source, in_checkout = cli.demo_notebooks_source()
    assert in_checkout and (source / cli.FIRST_NOTEBOOK).is_file()
    assert cli.main(["lab", "--dry-run", "--port", "9999", "--no-browser"]) == 0
    out = capsys.readouterr().out
    assert f"--ServerApp.root_dir={source}" in out
    assert "--port=9999" in out and "--no-browser" in out and cli.FIRST_NOTEBOOK in out


def test_lab_copies_into_a_chosen_folder(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lab", "--dir", str(tmp_path), "--dry-run"]) == 0
    assert (tmp_path / cli.FIRST_NOTEBOOK).is_file()
    assert f"--ServerApp.root_dir={tmp_path}" in capsys.readouterr().out


def test_lab_without_jupyterlab_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_jupyterlab_available", lambda: False)
    assert cli.main(["lab", "--dry-run"]) == 2
    assert "pip install 'neta-nb[lab]'" in capsys.readouterr().err
