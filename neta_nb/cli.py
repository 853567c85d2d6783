"""The ``neta-nb`` command: open the demo notebooks in JupyterLab.

``neta-nb lab`` opens JupyterLab on the demo notebooks, offline by default (the scripted
model plays when no API key is set). From a source checkout it uses the checkout's
``notebooks/`` folder; from an installed wheel it first copies the notebooks shipped in
the package to a user folder, never overwriting a notebook that is already there (the
user's edits win).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import platformdirs

__all__ = ["copy_notebooks", "demo_notebooks_source", "main"]

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


def copy_notebooks(source: Path, target: Path) -> list[Path]:
    """Copy the demo notebooks (and files they read) into ``target``; files that already
    exist there are left alone. Returns the files copied."""
    copied: list[Path] = []
    for file in sorted(source.rglob("*")):
        if not file.is_file() or ".ipynb_checkpoints" in file.parts:
            continue
        destination = target / file.relative_to(source)
        if destination.exists():
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, destination)
        copied.append(destination)
    return copied


def _jupyterlab_available() -> bool:
    return importlib.util.find_spec("jupyterlab") is not None


def _lab(args: argparse.Namespace) -> int:
    if not _jupyterlab_available():
        print("neta-nb lab needs JupyterLab, which is not installed in this environment.\n"
              "Install it with:  pip install 'neta-nb[lab]'", file=sys.stderr)
        return 2
    source, in_checkout = demo_notebooks_source()
    if args.dir is not None:
        folder = Path(args.dir).expanduser()
        copied = copy_notebooks(source, folder)
    elif in_checkout:
        folder, copied = source, []
    else:
        folder = default_user_folder()
        copied = copy_notebooks(source, folder)
    if copied:
        print(f"Copied {len(copied)} demo files to {folder}")
    print(f"Opening JupyterLab on {folder / FIRST_NOTEBOOK}")
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}",
               f"--port={args.port}", FIRST_NOTEBOOK]
    if args.no_browser:
        command.append("--no-browser")
    command.extend(args.lab_args)
    if args.dry_run:
        print(" ".join(command))
        return 0
    return subprocess.call(command, cwd=folder, env=os.environ.copy())


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
                    f"{default_user_folder()} (existing files are never overwritten).")
    lab.add_argument("--dir", help="copy the notebooks to this folder and open them there")
    lab.add_argument("--port", type=int, default=8888, help="port for JupyterLab (8888)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--dry-run", action="store_true",
                     help="print the JupyterLab command instead of running it")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER,
                     help="further arguments passed to JupyterLab (after --)")
    lab.set_defaults(run=_lab)

    notebooks = commands.add_parser(
        "notebooks", help="copy the demo notebooks to a folder without starting anything",
        description="Copy the demo notebooks to a folder; existing files are kept.")
    notebooks.add_argument("--dir", help=f"target folder (default {default_user_folder()})")
    notebooks.set_defaults(run=_notebooks)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "lab_args", None) and args.lab_args[0] == "--":
        args.lab_args = args.lab_args[1:]
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
