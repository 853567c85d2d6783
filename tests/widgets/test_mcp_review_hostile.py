"""``serve_notebook_mcp`` against what a notebook keeps and what a hostile reader sees:
the token is shown in the live widget, never in what the notebook saves."""

from __future__ import annotations

import asyncio
import atexit
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

import neta_nb
from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.messages import Message
from neta_nb.runtime.mcp_relay import RelayProvider
from neta_nb.runtime.session.resume import SessionNotResumableError
from neta_nb.tools import ToolCatalog
from neta_nb.tools.notebook import PAGE_NEEDED
from neta_nb.widgets import ChatView, SessionSidebar, mcp_review

from ..support.notebook_mcp import Kernel
from .conftest import SentMessages


async def test_the_token_is_in_no_text_the_notebook_saves(
        monkeypatch: pytest.MonkeyPatch, sent: SentMessages) -> None:
    monkeypatch.setattr(mcp_review, "get_ipython", lambda: Kernel())
    shown: list[Any] = []
    monkeypatch.setattr(mcp_review, "display", shown.append)
    monkeypatch.setattr(atexit, "register", lambda _f: None)
    token = "hostile-reader-token-0123456789"
    server = neta_nb.serve_notebook_mcp(token=token)
    try:
        [output] = shown
        # The cell's saved output: the widget reference and its text/plain fallback.
        bundle = output._repr_mimebundle_()
        assert token in output.children[0].value  # the live widget shows it
        assert all(token not in str(value) for value in bundle.values()), bundle
        assert token not in repr(output) and token not in repr(server)
    finally:
        await asyncio.to_thread(server.stop)


def _client_session(store: SessionStore) -> str:
    """A stored session of an outside client's calls, as a kernel that served it left it."""
    relay = RelayProvider("claude-code")
    session = AgentSession(Agent(name="claude-code", model=relay), ToolCatalog([]), store)
    store.append_message(session.id, Message.user("claude-code calls read_notebook"))
    assert session.flush(10)
    return session.id


def test_a_stored_client_session_opens_read_only_and_says_why_it_cannot_go_on(
        tmp_path: Path, sent: SentMessages) -> None:
    store = SessionStore(tmp_path / "calls.db")
    stored_id = _client_session(store)
    # The kernel restarted: the client's session is not live here any more.
    with pytest.raises(SessionNotResumableError,
                       match=r"outside MCP client 'claude-code'.*read-only"):
        AgentSession.resume(stored_id, store)
    chat = ChatView(AgentSession(Agent(name="mine", model=ScriptedProvider([])), store=store))
    sidebar = SessionSidebar(store, chat=chat)
    try:
        assert sidebar.open_session(stored_id) is None
        assert chat.session is None and chat.stored is not None
        assert [m["text"] for m in chat.messages] == ["claude-code calls read_notebook"]
        reply = chat._reply("take_over", "r", {})  # the read-only bar's "Continue here"
        assert reply["ok"] is False and "not connected to this kernel" in reply["error"]
        assert chat.session is None and chat.stored is not None
    finally:
        sidebar.close()


def test_under_nbclient_it_refuses_to_start_with_the_reason() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "from neta_nb import serve_notebook_mcp\nsrv = serve_notebook_mcp()",
        "%load_ext neta_nb\n%neta_mcp serve")]
    for cell in notebook.cells:
        cell.metadata["tags"] = ["raises-exception"]
    NotebookClient(notebook, kernel_name="python3", timeout=120, allow_errors=True,
                   resources={"metadata": {"path": "."}}).execute()
    for cell in notebook.cells:
        [error] = [output for output in cell.outputs if output.output_type == "error"]
        assert error.ename == "RuntimeError", error
        assert PAGE_NEEDED in error.evalue and "not run from a notebook page" in error.evalue


class PageRun:
    """A kernel whose current cell a page (or something else) ran: its request's
    metadata."""

    def __init__(self, metadata: dict[str, Any] | None) -> None:
        self.metadata = metadata

    def get_parent(self) -> dict[str, Any]:
        return {} if self.metadata is None else {"metadata": self.metadata}


@pytest.mark.parametrize("metadata", [None, {}, {"cellId": ""}, {"deletedCells": []}])
def test_a_cell_no_page_ran_is_refused(monkeypatch: pytest.MonkeyPatch,
                                       metadata: dict[str, Any] | None) -> None:
    class Shell:
        kernel = PageRun(metadata)

    monkeypatch.setattr(mcp_review, "get_ipython", lambda: Shell())
    with pytest.raises(RuntimeError, match="not run from a notebook page"):
        neta_nb.serve_notebook_mcp()


def test_a_mistyped_magic_does_not_echo_what_may_be_a_token() -> None:
    secret = "mistyped-flag-token-0123456789"
    for line in (f"serve --tokn {secret}", f"serve --port 1 --Token {secret}",
                 "serve --token"):
        with pytest.raises(ValueError, match="is not understood") as caught:
            mcp_review.neta_mcp_magic(line)
        assert secret not in str(caught.value)
