"""The ``neta-nb`` command: help for every subcommand, copying without overwriting, the
JupyterLab command it runs, and the message when JupyterLab is missing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    command = _printed_command(capsys)
    assert f"--ServerApp.root_dir={source}" in command
    assert "--port=9999" in command and "--no-browser" in command
    # The URL JupyterLab prints (and opens) is the quickstart's, not the Launcher's.
    assert f"--LabApp.default_url=/lab/tree/{cli.FIRST_NOTEBOOK}" in command


def _printed_command(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The command a dry run prints on its last line, as the shell would split it."""
    return shlex.split(capsys.readouterr().out.strip().splitlines()[-1])


def test_lab_passes_every_option_it_does_not_know_to_jupyterlab(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lab", "--allow-root", "--dry-run", "--port-retries=0", "--ServerApp.ip",
                     "127.0.0.1", "--port", "9000", "--", "--no-mathjax"]) == 0
    command = _printed_command(capsys)
    # In the order given, after neta-nb's own; --port-retries is not mistaken for --port.
    assert command[-5:] == ["--allow-root", "--port-retries=0", "--ServerApp.ip", "127.0.0.1",
                            "--no-mathjax"]
    assert "--port=9000" in command and "--" not in command


def test_other_subcommands_still_refuse_unknown_options(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["notebooks", "--allow-root"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --allow-root" in capsys.readouterr().err


def test_the_printed_command_survives_a_folder_with_spaces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "my notebooks"
    assert cli.main(["lab", "--dir", str(folder), "--dry-run"]) == 0
    assert f"--ServerApp.root_dir={folder}" in _printed_command(capsys)


def _demo_file_count() -> int:
    source, _ = cli.demo_notebooks_source()
    return sum(1 for file in source.rglob("*")
               if file.is_file() and ".ipynb_checkpoints" not in file.parts)


def test_lab_copies_into_a_chosen_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    started: list[list[str]] = []

    def call(command: list[str], **_: Any) -> int:
        started.append(command)
        return 0

    monkeypatch.setattr(subprocess, "call", call)  # the module neta_nb.cli calls it on
    assert cli.main(["lab", "--dir", str(tmp_path), "--no-browser"]) == 0
    assert (tmp_path / cli.FIRST_NOTEBOOK).is_file()
    assert (tmp_path / "data" / "sales.csv").is_file()
    assert f"Copied {_demo_file_count()} demo files" in capsys.readouterr().out
    assert f"--ServerApp.root_dir={tmp_path}" in started[0]


def test_a_dry_run_copies_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    chosen = tmp_path / "chosen"
    assert cli.main(["lab", "--dir", str(chosen), "--dry-run"]) == 0
    assert not chosen.exists()
    out = capsys.readouterr().out
    assert f"Would copy {_demo_file_count()} demo files" in out and "nothing copied" in out
    # Installed from a wheel: the notebooks would go to the user folder; a dry run leaves
    # it alone too.
    source, _ = cli.demo_notebooks_source()
    user_folder = tmp_path / "Documents" / "neta_nb-notebooks"
    monkeypatch.setattr(cli, "demo_notebooks_source", lambda: (source, False))
    monkeypatch.setattr(cli, "default_user_folder", lambda: user_folder)
    assert cli.main(["lab", "--dry-run"]) == 0
    assert not user_folder.exists()
    assert f"--ServerApp.root_dir={user_folder}" in _printed_command(capsys)


def test_lab_without_jupyterlab_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_jupyterlab_available", lambda: False)
    assert cli.main(["lab", "--dry-run"]) == 2
    assert "pip install 'neta-nb[lab]'" in capsys.readouterr().err


def test_lab_keeps_the_news_toast_and_update_check_off(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lab", "--dry-run", "--no-browser"]) == 0
    command = _printed_command(capsys)
    assert "--LabApp.news_url=None" in command
    assert "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in command


def test_an_option_given_for_jupyterlab_replaces_the_quiet_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    # JupyterLab refuses an option given twice ("news_url only accepts one value").
    assert cli.main(["lab", "--dry-run", "--no-browser", "--LabApp.news_url=None",
                     "--LabApp.check_for_updates_class", "jupyterlab.LabCheckForUpdate"]) == 0
    command = _printed_command(capsys)
    assert [arg for arg in command if arg.startswith("--LabApp.news_url")] == [
        "--LabApp.news_url=None"]
    assert [arg for arg in command if arg.startswith("--LabApp.check_for_updates_class")] == [
        "--LabApp.check_for_updates_class"]


def test_the_opening_line_reaches_a_pipe_before_jupyterlab_writes() -> None:
    # JupyterLab writes to the same file descriptor for as long as it runs: the line must
    # be out of Python's buffer before it starts, or a pipe shows it only at exit.
    script = ("import os, sys\n"
              "from neta_nb import cli\n"
              "def jupyterlab(*args, **kwargs):\n"
              "    os.write(1, b'JUPYTERLAB RUNNING\\n')\n"
              "    return 0\n"
              "cli._jupyterlab_available = lambda: True\n"
              "cli.subprocess.call = jupyterlab\n"
              "sys.exit(cli.main(['lab', '--no-browser']))\n")
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True, env=env)
    lines = done.stdout.splitlines()
    assert lines[-1] == "JUPYTERLAB RUNNING", lines
    assert lines[-2].startswith("Opening JupyterLab on "), lines


def test_lab_turns_the_jupyter_news_question_off(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """The "official Jupyter news?" toast is asked while the fetchNews setting is unset,
    whatever news_url says: JupyterLab starts with its announcements plugin disabled, as
    JupyterLab itself reads its page config in the environment ``neta-nb lab`` gives it."""
    started: list[dict[str, str]] = []

    def call(command: list[str], **options: Any) -> int:
        started.append(options["env"])
        return 0

    monkeypatch.setattr(subprocess, "call", call)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "/somewhere/of/the/user")
    assert cli.main(["lab", "--dir", str(tmp_path), "--no-browser"]) == 0
    [env] = started
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [
        str(cli.DEMO_LAB_CONFIG), "/somewhere/of/the/user"]  # the user's config stays
    read = ("from jupyterlab_server.config import get_static_page_config\n"
            "print(json.dumps(get_static_page_config(level='all')))")
    page = subprocess.run([sys.executable, "-c", f"import json\n{read}"], env=env,
                          capture_output=True, text=True, check=True, timeout=60)
    disabled = json.loads(page.stdout).get("disabledExtensions", {})
    assert disabled.get("@jupyterlab/apputils-extension:announcements") is True
