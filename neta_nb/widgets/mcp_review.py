"""``serve_notebook_mcp()``: the notebook served to outside MCP clients, and the review
view where the user sees and decides what they do.

The server (:class:`~neta_nb.runtime.mcp_server.NotebookMCPServer`) makes each client an
agent with a session of its own; this module shows each such session in a chat view of
its own, in the output of the cell that started the server. That view is the client's
page bridge (the notebook tools reach this notebook through it), shows its calls as
cards — a proposed edit as the diff card with Accept / Edit / Reject and Undo, a run
with Allow / Deny — and its header opens the client's tool panel, where its grants are
switched (``tools/list`` follows). What a client waits for is also shown in every other
live chat view of the notebook, where the user may be working (:mod:`.outside_reviews`).
The setup lines, with the token, are shown once, in a widget (not in the cell's saved
text).
"""

from __future__ import annotations

import asyncio
import atexit
import html
from collections.abc import Sequence
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from IPython import get_ipython
from IPython.display import display

from ..events import ApprovalDecision
from ..runtime.mcp_server import NotebookMCPServer
from ..runtime.session import AgentSession
from ..store.session_store import SessionStore
from ..tools.notebook import PAGE_NEEDED
from .chat.view import ChatView
from .outside_reviews import outside_reviews
from .static_form import requested_cell

__all__ = ["McpReview", "neta_mcp_magic", "register_magics", "serve_notebook_mcp"]


class McpReview(ipywidgets.VBox):  # type: ignore[misc]
    """The clients of one notebook's MCP server: a chat view for each, newest last."""

    def __init__(self, **kwargs: Any) -> None:
        self._empty = ipywidgets.HTML(
            "<i>No MCP client has connected yet. Each one that does shows here: its "
            "calls, the edits it proposes for you to accept or reject, and (header, "
            "tools button) the tools it may use.</i>")
        super().__init__(children=[self._empty], **kwargs)
        self.views: dict[str, ChatView] = {}
        self._shown: list[Any] = []

    def show(self, session: AgentSession) -> None:
        """A new client's session, in a chat view of its own (the server calls this on
        the kernel's loop)."""
        name = session.agent.name

        def decide(call_id: str, decision: ApprovalDecision, path: Sequence[str],
                   text: str | None) -> bool:
            # Answered in the session: every view's card goes with the call's next event.
            return session.approve(call_id, decision, subagent=list(path), text=text)

        def waiting(_change: object = None) -> None:
            # The client's own requests only, as its view shows them. The view may show
            # another chat meanwhile (its header opens others): those published last
            # stay until it is back (one answered meanwhile is refused as no longer
            # waiting). A review view shows no other client's requests (each has its own
            # view here), whatever it shows.
            if view.session is session:
                own = [item for item in view.approvals if "client" not in item]
                outside_reviews.publish(session.id, name, own, decide)

        view = ChatView(session)
        outside_reviews.add_review(view)
        view.observe(waiting, names=["approvals", "session_id"])

        def closed(change: dict[str, Any]) -> None:
            # Closed, the view no longer answers for the client (its requests go to the
            # session's policy): no other chat keeps a card of them.
            if change["new"] is None:
                outside_reviews.publish(session.id, name, [], decide)

        view.observe(closed, names="comm")
        waiting()
        self.views[name] = view
        title = ipywidgets.HTML(f"<b>{html.escape(session.agent.name)}</b> "
                                "<span style='opacity:0.7'>(outside MCP client)</span>")
        self._shown += [title, view]
        self.children = tuple(self._shown)


def serve_notebook_mcp(*, port: int = 0, token: str | None = None,
                       store: SessionStore | None = None, host: str = "127.0.0.1",
                       show: bool = True) -> NotebookMCPServer:
    """Serve this notebook's tools to outside MCP clients (Claude Code, Codex, Gemini CLI,
    Cursor) over Streamable HTTP on ``host`` (loopback only), ``port`` (0: a free one),
    with a bearer token (``None``: a new random one). Each client's calls are stored as a
    session in ``store`` (``None``: kept in memory) and shown below the cell for the user
    to review. Returns the server: ``.url``, ``.token``, ``.stop()``; it also stops when
    the kernel does.

    It needs a JupyterLab or Notebook 7 page: in plain IPython or a script it refuses to
    start, saying so."""
    loop = _kernel_loop()
    review = McpReview()
    server = NotebookMCPServer(kernel_loop=loop, show_client=review.show, store=store,
                               host=host, port=port, token=token)
    server.start()
    atexit.register(server.stop)
    if show:
        display(ipywidgets.VBox([_setup_view(server), review]))  # type: ignore[no-untyped-call]
    return server


def _kernel_loop() -> asyncio.AbstractEventLoop:
    """The kernel's event loop, where the clients' sessions run and the page answers;
    a clear refusal where there is no notebook kernel."""
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        raise RuntimeError(f"serve_notebook_mcp {PAGE_NEEDED}: it serves the notebook "
                           "shown on that page, and this is no notebook kernel (plain "
                           "Python or IPython).")
    if not _run_from_a_page(shell.kernel):
        raise RuntimeError(f"serve_notebook_mcp {PAGE_NEEDED}: this cell was not run from "
                           "a notebook page (nbclient, papermill, a console or another "
                           "frontend ran it), so no one would see or decide what the "
                           "clients propose. Run it in the notebook open in JupyterLab "
                           "or Notebook 7.")
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(f"serve_notebook_mcp {PAGE_NEEDED}: call it in a notebook "
                           "cell (the kernel's event loop is not running here).") from None


def _run_from_a_page(kernel: Any) -> bool:
    """Whether a notebook page ran the current cell: JupyterLab and Notebook 7 send the
    cell's id in the execute request's metadata (``cellId``); nbclient (papermill,
    nbconvert), a console and ``kernel.requestExecute`` send none. The page's own
    handshake cannot be waited for here: the kernel reads it only after this cell ends."""
    return requested_cell(kernel) is not None


class _SetupView(ipywidgets.HTML):  # type: ignore[misc]
    """The setup lines, token included, shown in the widget only: its ``repr`` — the
    ``text/plain`` a notebook saves with every widget output, read by nbconvert and any
    viewer without the widget — names no token."""

    def __repr__(self) -> str:
        return "MCP server setup lines (the token is shown in the live widget only)"


def _setup_view(server: NotebookMCPServer) -> ipywidgets.HTML:
    blocks = "".join(
        f"<div style='margin:4px 0'><b>{html.escape(client)}</b>"
        f"<pre style='margin:2px 0;white-space:pre-wrap'>{html.escape(lines)}</pre></div>"
        for client, lines in server.setup_lines().items())
    return _SetupView(
        f"<div><b>This notebook serves its tools over MCP at</b> "
        f"<code>{html.escape(server.url)}</code>. Add it to a client with one of these "
        f"(the token is shown only here; keep it private):{blocks}</div>")


_served: list[NotebookMCPServer] = []
"""The servers ``%neta_mcp serve`` started in this kernel (``%neta_mcp stop`` stops them)."""

_MAGIC_USAGE = ("usage: %neta_mcp serve [--port N] [--token TOKEN]  |  %neta_mcp stop  "
                "(serve the notebook's tools to outside MCP clients; see docs/mcp-server.md)")


def neta_mcp_magic(line: str) -> NotebookMCPServer | None:
    """``%neta_mcp serve [--port N] [--token TOKEN]`` starts :func:`serve_notebook_mcp`;
    ``%neta_mcp stop`` stops the servers it started. Registered by ``%load_ext neta_nb``."""
    words = line.split()
    if words[:1] == ["stop"] and len(words) == 1:
        while _served:
            _served.pop().stop()
        return None
    if words[:1] != ["serve"]:
        raise ValueError(_MAGIC_USAGE)
    options: dict[str, Any] = {}
    rest = words[1:]
    while rest:
        if len(rest) < 2 or rest[0] not in ("--port", "--token"):
            # Only the word not understood: what follows it may be a token, and an error
            # is saved with the cell's output.
            raise ValueError(f"{rest[0]!r} is not understood; {_MAGIC_USAGE}")
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--port":
            if not value.isdigit():
                raise ValueError(f"--port takes a number, not {value!r}")
            options["port"] = int(value)
        else:
            options["token"] = value
    server = serve_notebook_mcp(**options)
    _served.append(server)
    return None


def register_magics(shell: Any) -> None:
    """What ``%load_ext neta_nb`` does: the ``%neta_mcp`` line magic."""
    shell.register_magic_function(neta_mcp_magic, magic_kind="line", magic_name="neta_mcp")
