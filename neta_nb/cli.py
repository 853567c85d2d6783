"""The ``neta-nb`` command: open the demo notebooks in JupyterLab.

``neta-nb lab`` opens JupyterLab on the demo notebooks, offline by default (the scripted
model plays when no API key is set). From a source checkout it uses the checkout's
``notebooks/`` folder; from an installed wheel it first copies the notebooks shipped in
the package to a user folder, never overwriting a notebook that is already there (the
user's edits win). Every option it does not know itself goes to JupyterLab unchanged
(``--allow-root``, ``--ip=0.0.0.0``, ``--ServerApp.token=…``), and ``--dry-run`` only says
what it would copy and run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import platformdirs

__all__ = ["DEMO_LAB_CONFIG", "copy_notebooks", "demo_notebooks_source", "jupyterlab_command",
           "lab_environment", "main", "notebooks_to_copy", "parse_arguments"]

_PACKAGE = Path(__file__).resolve().parent
FIRST_NOTEBOOK = "01_quickstart.ipynb"


def demo_notebooks_source() -> tuple[Path, bool]:
    """Where the demo notebooks are, and whether that is a source checkout (used in
    place) rather than the copy shipped inside the package."""
    checkout = _PACKAGE.parent / "notebooks"
    if (checkout / FIRST_NOTEBOOK).is_file() and (_PACKAGE.parent / "pyproject.toml").is_file():
        return checkout, True
    return _PACKAGE / "_notebooks", False


def default_user_folder() -> Path:
    return Path(platformdirs.user_documents_dir()) / "neta_nb-notebooks"


def notebooks_to_copy(source: Path, target: Path) -> list[tuple[Path, Path]]:
    """The (source, destination) pairs :func:`copy_notebooks` would copy: every demo file
    not already in ``target``, without JupyterLab's checkpoint folders."""
    pairs: list[tuple[Path, Path]] = []
    for file in sorted(source.rglob("*")):
        if not file.is_file() or ".ipynb_checkpoints" in file.parts:
            continue
        destination = target / file.relative_to(source)
        if not destination.exists():
            pairs.append((file, destination))
    return pairs


def copy_notebooks(source: Path, target: Path) -> list[Path]:
    """Copy the demo notebooks (and files they read) into ``target``; files that already
    exist there are left alone. Returns the files copied."""
    copied: list[Path] = []
    for file, destination in notebooks_to_copy(source, target):
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, destination)
        copied.append(destination)
    return copied


def _jupyterlab_available() -> bool:
    return importlib.util.find_spec("jupyterlab") is not None


def jupyterlab_command(folder: Path, port: int, *, open_browser: bool,
                       extra: Sequence[str] = ()) -> list[str]:
    """The JupyterLab command line that serves ``folder`` and lands on the quickstart.

    ``default_url`` is what JupyterLab prints ("copy and paste one of these URLs") and what
    it opens, so the printed URL and the opened tab both show the quickstart instead of
    the Launcher. ``extra`` comes last: an option given there wins over these.
    """
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}",
               f"--port={port}", f"--LabApp.default_url=/lab/tree/{FIRST_NOTEBOOK}"]
    # No "get Jupyter news?" toast and no update check over the chat of a first visit —
    # unless `extra` says otherwise: JupyterLab refuses an option given twice.
    quiet = {"--LabApp.news_url": "None",
             "--LabApp.check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}
    command.extend(f"{name}={value}" for name, value in quiet.items()
                   if not any(arg == name or arg.startswith(f"{name}=") for arg in extra))
    if not open_browser:
        command.append("--no-browser")
    command.extend(extra)
    return command


DEMO_LAB_CONFIG = _PACKAGE / "demo_lab"
"""A Jupyter config directory ``neta-nb lab`` puts first on ``JUPYTER_CONFIG_PATH``: its
``labconfig/page_config.json`` turns JupyterLab's announcements off, whose "Would you like
to get notified about official Jupyter news?" toast (asked while the ``fetchNews`` setting
is unset, whatever ``news_url`` says) would cover the chat of a first visit."""


def lab_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The environment JupyterLab runs in: ``base`` with :data:`DEMO_LAB_CONFIG` first on
    ``JUPYTER_CONFIG_PATH`` (the directories already there stay, after it)."""
    env = dict(base)
    paths = [str(DEMO_LAB_CONFIG), *filter(None, env.get("JUPYTER_CONFIG_PATH", "")
                                           .split(os.pathsep))]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
    return env


def _lab(args: argparse.Namespace) -> int:
    if not _jupyterlab_available():
        print("neta-nb lab needs JupyterLab, which is not installed in this environment.\n"
              "Install it with:  pip install 'neta-nb[lab]'", file=sys.stderr)
        return 2
    source, in_checkout = demo_notebooks_source()
    if args.dir is None and in_checkout:
        folder = source  # the checkout's notebooks, used in place
    else:
        folder = Path(args.dir).expanduser() if args.dir is not None else default_user_folder()
        if args.dry_run:
            pending = notebooks_to_copy(source, folder)
            print(f"Would copy {len(pending)} demo files to {folder} (dry run: nothing "
                  "copied)")
        else:
            copied = copy_notebooks(source, folder)
            if copied:
                print(f"Copied {len(copied)} demo files to {folder}", flush=True)
    # Flushed: JupyterLab, started next, writes to the same stream for as long as it
    # runs, and a pipe (a log, CI) would show this line only after it exits.
    print(f"{'Would open' if args.dry_run else 'Opening'} JupyterLab on "
          f"{folder / FIRST_NOTEBOOK}", flush=True)
    command = jupyterlab_command(folder, args.port, open_browser=not args.no_browser,
                                 extra=args.lab_args)
    if args.dry_run:
        print(shlex.join(command))
        return 0
    return subprocess.call(command, cwd=folder, env=lab_environment(os.environ))


def _notebooks(args: argparse.Namespace) -> int:
    source, _ = demo_notebooks_source()
    folder = Path(args.dir).expanduser() if args.dir else default_user_folder()
    copied = copy_notebooks(source, folder)
    print(f"{len(copied)} demo files copied to {folder} "
          f"({'nothing overwritten' if copied else 'all were already there'})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="neta-nb",
        description="Run LLM agents inside Jupyter and watch their work live.")
    parser.add_argument("--version", action="version", version=f"neta-nb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    lab = commands.add_parser(
        "lab", help="open JupyterLab on the demo notebooks (offline unless a key is set)",
        description="Open JupyterLab on the demo notebooks. From a source checkout the "
                    "checkout's notebooks/ are used in place; otherwise they are copied to "
                    f"{default_user_folder()} (existing files are never overwritten).",
        usage="%(prog)s [--dir DIR] [--port PORT] [--no-browser] [--dry-run] "
              "[JupyterLab options]",
        epilog="Any other option is passed to JupyterLab unchanged, e.g. "
               "`neta-nb lab --allow-root --ip=0.0.0.0` (options after `--` too).",
        # Only these exact option names are ours; a JupyterLab option that happens to
        # start like one of them (--port-retries) must reach JupyterLab.
        allow_abbrev=False)
    lab.add_argument("--dir", help="copy the notebooks to this folder and open them there")
    lab.add_argument("--port", type=int, default=8888, help="port for JupyterLab (8888)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--dry-run", action="store_true",
                     help="copy nothing and start nothing: print what would be copied and "
                          "the JupyterLab command")
    lab.set_defaults(run=_lab, passes_options_on=True)

    notebooks = commands.add_parser(
        "notebooks", help="copy the demo notebooks to a folder without starting anything",
        description="Copy the demo notebooks to a folder; existing files are kept.")
    notebooks.add_argument("--dir", help=f"target folder (default {default_user_folder()})")
    notebooks.set_defaults(run=_notebooks)
    return parser


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed; for ``lab``, what it does not know is in ``lab_args``."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if not getattr(args, "passes_options_on", False):
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        return args
    # What `neta-nb lab` does not know belongs to JupyterLab, in the order given; a `--`
    # that separated them is argparse's, not JupyterLab's.
    if "--" in unknown:
        unknown.remove("--")
    args.lab_args = unknown
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
