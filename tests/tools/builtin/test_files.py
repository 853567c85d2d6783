"""read_file and list_files: confined to the working directory, symlinks included."""

from __future__ import annotations

from pathlib import Path

import pytest

from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import list_files, read_file
from neta_nb.tools.builtin.files import MAX_LIST_ENTRIES
from neta_nb.tools.builtin.workspace import OutsideWorkingDirError


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "data").mkdir(parents=True)
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (root / "data" / "table.csv").write_text("a,b\n1,2\n")
    (root / "empty.txt").write_text("")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (root / "link_out").symlink_to(secret)
    (root / "dir_out").symlink_to(tmp_path, target_is_directory=True)
    (root / "link_in").symlink_to(root / "notes.txt")
    return root


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(working_dir=workspace)


async def test_read_file(ctx: ToolContext) -> None:
    assert await read_file.invoke({"path": "notes.txt"}, ctx) == "one\ntwo\nthree"
    assert await read_file.invoke({"path": "link_in"}, ctx) == "one\ntwo\nthree"
    assert await read_file.invoke({"path": "./data/../notes.txt", "start_line": 2,
                                   "max_lines": 1}, ctx) == (
        "two\n\n[lines 2-2 of 3 of 'notes.txt'; call read_file with start_line=3 to read on]")
    assert await read_file.invoke({"path": "notes.txt", "start_line": 3}, ctx) == (
        "three\n\n[lines 3-3 of 3 of 'notes.txt']")
    assert await read_file.invoke({"path": "empty.txt"}, ctx) == "'empty.txt' is empty."


async def test_read_file_accepts_absolute_paths_inside(ctx: ToolContext,
                                                       workspace: Path) -> None:
    path = str(workspace / "data" / "table.csv")
    assert await read_file.invoke({"path": path}, ctx) == "a,b\n1,2"


@pytest.mark.parametrize("path", ["../secret.txt", "link_out", "dir_out/secret.txt", "/etc/passwd",
                                  "data/../../secret.txt", "~/x"])
async def test_paths_escaping_the_working_dir_are_refused(path: str, ctx: ToolContext) -> None:
    with pytest.raises(OutsideWorkingDirError, match="outside the working directory"):
        await read_file.invoke({"path": path}, ctx)


@pytest.mark.parametrize(("args", "error", "message"), [
    ({"path": "missing.txt"}, FileNotFoundError, "'missing.txt' does not exist"),
    ({"path": "data"}, IsADirectoryError, "'data' is a directory"),
    ({"path": "blob.bin"}, ValueError, "looks like a binary file"),
    ({"path": "notes.txt", "start_line": 9}, ValueError, "past the end"),
    ({"path": "notes.txt", "start_line": 0}, ValueError, "start_line must be 1 or more"),
])
async def test_read_file_errors(args: dict[str, object], error: type[Exception],
                                message: str, ctx: ToolContext) -> None:
    with pytest.raises(error, match=message):
        await read_file.invoke(args, ctx)


async def test_list_files(ctx: ToolContext) -> None:
    listing = await list_files.invoke({}, ctx)
    assert listing.splitlines() == [
        "./ (7 entries)",
        "data/",
        "dir_out -> (link outside the working directory)",
        "blob.bin (3 B)",
        "empty.txt (0 B)",
        "link_in (14 B)",
        "link_out -> (link outside the working directory)",
        "notes.txt (14 B)",
    ]


async def test_list_files_recursive_with_pattern(ctx: ToolContext) -> None:
    assert await list_files.invoke({"recursive": True, "pattern": "*.csv"}, ctx) == (
        "./ (1 entry)\ndata/table.csv (8 B)")
    assert await list_files.invoke({"path": "data"}, ctx) == (
        "data/ (1 entry)\ndata/table.csv (8 B)")
    assert await list_files.invoke({"pattern": "*.md"}, ctx) == (
        "'.' has no entries matching '*.md'.")


async def test_list_files_never_follows_links_outside(ctx: ToolContext) -> None:
    listing = await list_files.invoke({"recursive": True}, ctx)
    assert "secret" not in listing
    with pytest.raises(OutsideWorkingDirError):
        await list_files.invoke({"path": "dir_out"}, ctx)
    with pytest.raises(OutsideWorkingDirError):
        await list_files.invoke({"path": ".."}, ctx)


async def test_list_files_is_bounded(tmp_path: Path) -> None:
    for i in range(MAX_LIST_ENTRIES + 5):
        (tmp_path / f"f{i:04}").touch()
    listing = await list_files.invoke({}, ToolContext(working_dir=tmp_path))
    lines = listing.splitlines()
    assert lines[0] == f"./ ({MAX_LIST_ENTRIES} entries, cut)"
    assert lines[-1].startswith(f"[listing cut at {MAX_LIST_ENTRIES} entries")
    assert len(lines) == MAX_LIST_ENTRIES + 2


async def test_list_files_errors(ctx: ToolContext) -> None:
    with pytest.raises(NotADirectoryError, match=r"'notes\.txt' is a file"):
        await list_files.invoke({"path": "notes.txt"}, ctx)
    with pytest.raises(FileNotFoundError):
        await list_files.invoke({"path": "nowhere"}, ctx)


def test_file_tools_metadata() -> None:
    for item in (read_file, list_files):
        assert item.category == "base"
        assert item.core
        assert item.visibility == "tool"
    assert read_file.label == "Read file"
