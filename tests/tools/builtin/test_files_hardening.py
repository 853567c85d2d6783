"""read_file and list_files on real files that break naive code: a 50 MB file, one huge
line, a FIFO, a socket, a device, symlink loops and dangling links.

Every call goes through ``Tool.invoke``, as the runtime makes it, and every call that
could block runs under a timeout so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import files, list_files, read_file
from neta_nb.tools.builtin.files import MAX_READ_CHARS
from neta_nb.tools.builtin.workspace import SymlinkLoopError

BIG_LINES = 500_000
LINE_BYTES = 100  # 50 MB in all
PEAK_LIMIT = 4 * 1024 * 1024
WITHIN = 5.0  # seconds: generous for a shared machine, still far from a hang


def _big_line(number: int) -> str:
    head = f"line {number:07d} "
    return head + "x" * (LINE_BYTES - len(head) - 1) + "\n"


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big")
    with (root / "big.log").open("w") as out:
        for start in range(1, BIG_LINES + 1, 10_000):
            out.write("".join(_big_line(n) for n in range(start, start + 10_000)))
    assert (root / "big.log").stat().st_size == BIG_LINES * LINE_BYTES
    return root


async def _read(ctx: ToolContext, **args: Any) -> str:
    return await asyncio.wait_for(read_file.invoke(args, ctx), WITHIN)


async def _read_with_peak(ctx: ToolContext, **args: Any) -> tuple[str, int]:
    tracemalloc.start()
    try:
        text = await _read(ctx, **args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return text, peak


async def test_five_lines_of_a_50_mb_file_cost_little_memory(big_dir: Path) -> None:
    text, peak = await _read_with_peak(ToolContext(working_dir=big_dir), path="big.log",
                                       max_lines=5)
    assert text == ("".join(_big_line(n) for n in range(1, 6)).rstrip("\n")
                    + f"\n\n[lines 1-5 of {BIG_LINES} of 'big.log'; call read_file with "
                      "start_line=6 to read on]")
    assert peak < PEAK_LIMIT, f"peak {peak:,} bytes"


async def test_reading_deep_into_a_50_mb_file_is_bounded(big_dir: Path) -> None:
    text, peak = await _read_with_peak(ToolContext(working_dir=big_dir), path="big.log",
                                       start_line=400_000, max_lines=3)
    assert text.splitlines()[:3] == [_big_line(n).rstrip("\n")
                                     for n in (400_000, 400_001, 400_002)]
    assert text.endswith(f"[lines 400000-400002 of {BIG_LINES} of 'big.log'; call read_file "
                         "with start_line=400003 to read on]")
    assert peak < PEAK_LIMIT, f"peak {peak:,} bytes"


async def test_the_last_lines_and_past_the_end(big_dir: Path) -> None:
    ctx = ToolContext(working_dir=big_dir)
    text = await _read(ctx, path="big.log", start_line=BIG_LINES - 1)
    assert text.endswith(f"[lines {BIG_LINES - 1}-{BIG_LINES} of {BIG_LINES} of 'big.log']")
    with pytest.raises(ValueError, match=rf"past the end of 'big.log' \({BIG_LINES} lines\)"):
        await _read(ctx, path="big.log", start_line=BIG_LINES + 1)


async def test_a_file_too_big_to_count_says_more_lines_follow(
        big_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The total is counted only within a scan budget; beyond it the footer gives the
    # size and still says how to read on.
    monkeypatch.setattr(files, "_COUNT_AHEAD_BYTES", 1 << 20)
    text = await _read(ToolContext(working_dir=big_dir), path="big.log", start_line=10,
                       max_lines=2)
    assert text.endswith("[lines 10-11 of 'big.log' (47.7 MB; more lines follow); call "
                         "read_file with start_line=12 to read on]")


async def test_one_huge_line_is_cut_and_reading_goes_on(tmp_path: Path) -> None:
    (tmp_path / "min.json").write_text("[" + "1," * 2_500_000 + "1]\nafter\n")
    ctx = ToolContext(working_dir=tmp_path)
    text, peak = await _read_with_peak(ctx, path="min.json")
    first, footer = text.split("\n\n")
    assert first == ("[" + "1," * 2_500_000)[:MAX_READ_CHARS]
    assert footer == (f"[line 1 of 'min.json' is longer than {MAX_READ_CHARS:,} characters "
                      "and was cut; call read_file with start_line=2 to read on]")
    assert peak < PEAK_LIMIT, f"peak {peak:,} bytes"
    assert await _read(ctx, path="min.json", start_line=2) == (
        "after\n\n[lines 2-2 of 2 of 'min.json']")


async def test_windows_line_ends_read_like_unix_ones(tmp_path: Path) -> None:
    (tmp_path / "crlf.txt").write_bytes("one\r\ntwo ü\r\nthree".encode())
    ctx = ToolContext(working_dir=tmp_path)
    assert await _read(ctx, path="crlf.txt") == "one\ntwo ü\nthree"
    assert await _read(ctx, path="crlf.txt", start_line=2, max_lines=1) == (
        "two ü\n\n[lines 2-2 of 3 of 'crlf.txt'; call read_file with start_line=3 to "
        "read on]")


async def _read_fifo_within(ctx: ToolContext, fifo: Path, seconds: float) -> str:
    """``read_file`` on ``fifo`` under a timeout. If a regression left the worker thread
    blocked on the FIFO, its write end is opened and closed so that thread gets
    end-of-file: the event loop joins its worker threads when it closes, and would
    otherwise hang there instead of failing this test."""
    try:
        return await asyncio.wait_for(read_file.invoke({"path": fifo.name}, ctx), seconds)
    finally:
        with contextlib.suppress(OSError):  # no reader waiting: nothing to release
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path.resolve() / "pipe"
    os.mkfifo(path)
    return path


async def test_a_fifo_is_refused_at_once(fifo: Path) -> None:
    ctx = ToolContext(working_dir=fifo.parent)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ValueError, match=r"'pipe' is a named pipe \(FIFO\), not a regular "
                                         "file; read_file reads regular files only"):
        await _read_fifo_within(ctx, fifo, 1.0)
    assert loop.time() - started < 1.0


async def test_a_fifo_swapped_in_after_the_check_does_not_block(
        fifo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The race the non-blocking open guards: the path looked like a regular file when it
    # was checked, and is a FIFO by the time it is opened.
    real_stat = os.stat
    regular = real_stat(__file__)
    swapped = str(fifo)

    def stat_before_the_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(path) == swapped:
            return regular
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat_before_the_swap)
    with pytest.raises(ValueError, match=r"'pipe' is a named pipe \(FIFO\)"):
        await _read_fifo_within(ToolContext(working_dir=fifo.parent), fifo, 1.0)


async def test_a_socket_is_refused(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / "sock"))
        with pytest.raises(ValueError, match="'sock' is a socket, not a regular file"):
            await _read(ToolContext(working_dir=tmp_path), path="sock")


async def test_a_device_is_refused() -> None:
    # /dev as the working directory: a device reached without leaving it. (/dev/zero
    # would make the unfixed code allocate without end; /dev/null fails it safely.)
    with pytest.raises(ValueError, match="'null' is a character device, not a regular file"):
        await _read(ToolContext(working_dir=Path("/dev")), path="null")


@pytest.fixture
def tangled(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_text("a,b\n")
    (tmp_path / "data" / "self").symlink_to("self")
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "ping").symlink_to("pong")
    (tmp_path / "pong").symlink_to("ping")
    (tmp_path / "gone").symlink_to("nothing-here")
    os.mkfifo(tmp_path / "pipe")
    return tmp_path


async def test_links_that_lead_nowhere_do_not_fail_the_listing(tangled: Path) -> None:
    ctx = ToolContext(working_dir=tangled)
    listing = await asyncio.wait_for(list_files.invoke({"recursive": True}, ctx), WITHIN)
    assert listing.splitlines() == [
        "./ (8 entries)",
        "data/",
        "gone -> (broken link)",
        "notes.txt (6 B)",
        "ping -> (symbolic link loop)",
        "pipe (named pipe (FIFO))",
        "pong -> (symbolic link loop)",
        "data/self -> (symbolic link loop)",
        "data/table.csv (4 B)",
    ]


async def test_a_symlink_loop_is_a_clear_error_when_named(tangled: Path) -> None:
    ctx = ToolContext(working_dir=tangled)
    with pytest.raises(SymlinkLoopError, match="'ping' is a symbolic link loop"):
        await _read(ctx, path="ping")
    with pytest.raises(SymlinkLoopError, match="'data/self' is a symbolic link loop"):
        await list_files.invoke({"path": "data/self"}, ctx)
