"""The page bridge and the chat view against a flaky page: a view scrolled off the page for
a moment, replies lost, repeated, late or malformed, two chat views of one session, a
sub-agent's proposal decided from the parent's chat, and the static form of a damaged
proposal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from neta_nb import Agent, AgentSession
from neta_nb.tools.notebook import NotebookError
from neta_nb.tools.rich import CELL_EDIT_TYPE
from neta_nb.widgets import ChatView
from neta_nb.widgets.chat import notebook_page
from neta_nb.widgets.chat.notebook_page import PageBridge
from neta_nb.widgets.rich_static import output_placeholder, proposal_html

from ..support.delegation import crew_catalog, delegations
from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import FakeProvider, answer, assert_valid_history, calls, make_session
from ..support.timing import wait_until
from ..tools.test_notebook_tools import CELLS, NOTEBOOK_TOOLS
from .conftest import SentMessages


def _bridge() -> tuple[PageBridge, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    return PageBridge(sent.append), sent


def _opened(view: ChatView, view_id: str) -> None:
    view._on_custom_message(view, {"kind": "view_opened", "id": f"o-{view_id}",
                                   "view_id": view_id, "notebook_bridge": True}, [])


def cell_fixing_crew() -> AgentSession:
    """A planner that delegates "fix c1" (call ``d1``) to a fixer whose edit of ``c1``
    (call ``e``, ``x = 1``) waits for the user's decision, then answers "done"."""
    fixer = Agent("fixer", model=FakeProvider([
        calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 1"})), answer("fixed")]),
        description="fixes cells", tools=NOTEBOOK_TOOLS)
    planner = Agent("planner", model=FakeProvider([delegations(("d1", "fixer", "fix c1")),
                                                   answer("done")]), subagents=[fixer])
    return AgentSession(planner, crew_catalog())


async def test_a_view_off_the_page_for_a_moment_answers_again_once_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # JupyterLab's windowed notebook detaches a cell scrolled out of view: its chat view
    # answers "not_on_page" until it is scrolled back, and stays the notebook's way in.
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("v", True)
    task = asyncio.create_task(bridge.request("read", {}))
    await wait_until(lambda: sent)
    bridge.replied({"request_id": sent[0]["id"], "ok": False,
                    "error": {"code": "not_on_page", "message": "scrolled out of view"}})
    with pytest.raises(NotebookError) as raised:
        await task
    assert raised.value.code == "not_on_page" and "scrolled out of view" in str(raised.value)
    assert bridge.available  # the edit and run tools stay offered
    task = asyncio.create_task(bridge.request("read", {}))
    await wait_until(lambda: len(sent) > 1)
    assert sent[-1]["view_id"] == "v"
    bridge.replied({"request_id": sent[-1]["id"], "ok": True, "result": {"cells": []}})
    assert await task == {"cells": []}


async def test_another_view_answers_while_one_is_off_the_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("a", True)
    bridge.opened("b", True)
    task = asyncio.create_task(bridge.request("read", {}))
    await wait_until(lambda: sent)
    assert sent[0]["view_id"] == "b"
    bridge.replied({"request_id": sent[0]["id"], "ok": False,
                    "error": {"code": "not_on_page", "message": "detached"}})
    await wait_until(lambda: any(m["view_id"] == "a" for m in sent))
    asked = next(m for m in sent if m["view_id"] == "a")
    bridge.replied({"request_id": asked["id"], "ok": True, "result": {"cells": []}})
    assert await task == {"cells": []}
    assert bridge._views == {"a": True, "b": True}


async def test_malformed_and_stray_replies_change_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("v", True)
    for stray in ({}, {"request_id": None}, {"request_id": 3, "ok": True},
                  {"request_id": "nobody", "ok": True, "result": {"cells": []}}):
        assert not bridge.replied(stray)
    task = asyncio.create_task(bridge.request("edit", {"cell_id": "c"}))
    await wait_until(lambda: sent)
    bridge.replied({"request_id": sent[0]["id"], "ok": False, "error": "a string"})
    with pytest.raises(NotebookError) as raised:
        await task
    assert raised.value.code == "failed"
    task = asyncio.create_task(bridge.request("read", {}))
    await wait_until(lambda: len(sent) > 1)
    bridge.replied({"request_id": sent[-1]["id"], "ok": True, "result": ["not", "a", "map"]})
    assert await task == {}


async def test_two_chats_of_one_session_one_switching_away_leaves_the_page_to_the_other(
        sent: SentMessages) -> None:
    session, _, _ = make_session([answer("ok")])
    first = ChatView(session)
    _opened(first, "first-view")
    second = ChatView(session)
    _opened(second, "second-view")
    other, _, _ = make_session([answer("x")])
    second.bind(other)  # the second chat shows another session now
    assert first.session is session
    assert session.notebook_page is not None and session.notebook_page.available
    task = asyncio.create_task(session.notebook_page.request("read", {}))
    await wait_until(lambda: sent.of_kind("notebook_request"))
    assert sent.of_kind("notebook_request")[0]["view_id"] == "first-view"
    task.cancel()
    first.unbind()
    assert session.notebook_page is None


async def test_a_subagents_proposal_is_decided_from_the_parents_chat(
        sent: SentMessages) -> None:
    page = FakeNotebookPage(CELLS)
    session = cell_fixing_crew()
    view = ChatView(session)
    session.notebook_page = page  # the page the view is on
    view._presence.opened("v")  # a view is shown: it answers the approvals
    task = session.start("go")
    await wait_until(lambda: bool(view.approvals) or task.done())
    [approval] = view.approvals
    assert approval["path"] == ["d1"] and approval["proposal"]["after"] == "x = 1"
    view._on_custom_message(view, {"kind": "command", "id": "c", "command": {
        "type": "approve", "id": "e", "decision": "allow_once", "subagent": ["d1"],
        "text": "x = 1  # reviewed"}}, [])
    await task
    assert page.cell("c1")["source"] == "x = 1  # reviewed"
    assert view.approvals == []
    assert_valid_history(session.subagents["d1"].messages)


def test_the_static_form_of_a_malformed_proposal_is_a_placeholder_not_a_crash() -> None:
    # Any tool may return an item of the cell-edit type; a stored one may be damaged.
    for text in (json.dumps({"diff": ["+a"], "diff_left_out": "many"}),
                 json.dumps({"diff": ["+a"], "diff_left_out": [1]}),
                 "[" * 100_000 + "]" * 100_000, "{not json"):
        item = {"media_type": CELL_EDIT_TYPE, "text": text}
        assert "<" not in output_placeholder(item, "en")
        html_form = proposal_html(item, "en")
        assert html_form.startswith("<div>") and "many" not in html_form
