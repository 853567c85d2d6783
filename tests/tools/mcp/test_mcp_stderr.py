"""A stdio MCP server's stderr: however much it writes, the kernel keeps only its end, and
the errors that quote it still show the server's last words. The servers are the raw
JSON-RPC ones in ``tests/support/mcp_hostile_server.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

from neta_nb import ToolCatalog, ToolContext
from neta_nb.tools.mcp.mcp import MCPServerError, ServerStatus
from neta_nb.tools.mcp.mcp_stderr import TAIL_BYTES, StderrTail

HOSTILE = Path(__file__).parents[2] / "support" / "mcp_hostile_server.py"
LAST_WORDS = "fatal: the licence server is unreachable"
MB = 1_000_000
FDS = Path("/dev/fd")
needs_fd_listing = pytest.mark.skipif(not FDS.is_dir(), reason="needs /dev/fd")


@pytest.fixture
def catalog(default_catalog: ToolCatalog) -> ToolCatalog:
    return default_catalog


async def _add(catalog: ToolCatalog, name: str, mode: str, megabytes: int, **options: Any
               ) -> Any:
    return await catalog.add_mcp_server(
        name, command=sys.executable, args=[str(HOSTILE), mode, str(megabytes)], **options)


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir(FDS)}


def _unlinked_file_bytes() -> int:
    """What this process holds in open files that have no name any more (a temporary
    file): disk that nobody can see, freed only when the file is closed."""
    total = 0
    for fd in _open_fds():
        try:
            status = os.fstat(fd)
        except OSError:
            continue  # the descriptor os.listdir itself used
        if status.st_nlink == 0:
            total += status.st_size
    return total


def _reader_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == "mcp-server-stderr"}


def _resident_bytes() -> int:
    return int(psutil.Process().memory_info().rss)


# --- the capture ------------------------------------------------------------------------

def test_the_capture_keeps_only_the_end_of_64_mb_and_counts_the_rest() -> None:
    tail = StderrTail()
    try:
        writer = ("import sys\n"
                  "sys.stderr.write(('noise ' * 15 + '\\n') * 700_000)\n"  # 63.7 MB
                  f"sys.stderr.write({LAST_WORDS!r} + '\\n')\n")
        subprocess.run([sys.executable, "-c", writer], stderr=tail.errlog, check=True,
                       timeout=60)
        assert tail.ending(600).endswith("noise \n" + LAST_WORDS)
        assert tail.kept <= TAIL_BYTES
        assert tail.kept + tail.dropped == 91 * 700_000 + len(LAST_WORDS) + 1
    finally:
        tail.close()


@needs_fd_listing
def test_closing_the_capture_ends_its_thread_and_frees_its_pipes() -> None:
    fds, readers = _open_fds(), _reader_threads()
    tail = StderrTail()
    assert len(_reader_threads()) == len(readers) + 1
    subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('bye')"],
                   stderr=tail.errlog, check=True, timeout=60)
    tail.close()
    assert _reader_threads() <= readers
    assert _open_fds() <= fds
    assert tail.closed and tail.ending(100) == "bye"  # still readable after the close


# --- servers ----------------------------------------------------------------------------

@needs_fd_listing
async def test_a_server_that_writes_64_mb_to_stderr_works_and_only_its_end_is_kept(
        catalog: ToolCatalog) -> None:
    # Its stderr went to a temporary file kept open for the kernel's lifetime: all 64 MB
    # of it, on disk, though only the last lines were ever read.
    files, memory = _unlinked_file_bytes(), _resident_bytes()
    server = await _add(catalog, "chatty", "chatty", 64)
    assert await catalog["chatty__echo"].invoke({}, ToolContext()) == "ok"
    assert server.status is ServerStatus.CONNECTED
    assert _unlinked_file_bytes() - files < MB
    assert _resident_bytes() - memory < 32 * MB


async def test_a_server_that_dies_after_64_mb_of_stderr_is_quoted_by_its_last_words(
        catalog: ToolCatalog) -> None:
    with pytest.raises(MCPServerError, match="failed to start") as failure:
        await _add(catalog, "doomed", "doomed", 64)
    reason = failure.value.reason
    assert "; its stderr ends: " in reason and reason.endswith("noise \n" + LAST_WORDS)
    assert len(reason) < 1_000


async def test_a_server_that_never_answers_is_quoted_by_its_last_words(
        catalog: ToolCatalog) -> None:
    # The tail was read after the connection had closed the server's stderr: the timeout
    # said nothing of what the server wrote.
    with pytest.raises(MCPServerError, match="did not answer within 1 s; its stderr ends: "
                       ) as failure:
        await _add(catalog, "mute", "mute", 8, timeout=1)
    assert failure.value.reason.endswith("noise \n" + LAST_WORDS)
