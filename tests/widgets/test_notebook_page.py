"""PageBridge: a notebook tool's request reaches the newest view with the extension, is
sent again under the same id while unanswered, and is given up with a clear error —
never waited on for ever."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from neta_nb.tools.notebook import NotebookError
from neta_nb.widgets import ChatView
from neta_nb.widgets.chat import notebook_page
from neta_nb.widgets.chat.notebook_page import PageBridge

from ..support.sessions import answer, make_session
from ..support.timing import wait_until
from .conftest import SentMessages


def _bridge() -> tuple[PageBridge, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    return PageBridge(sent.append), sent


async def test_a_request_goes_to_the_newest_view_with_the_extension() -> None:
    bridge, sent = _bridge()
    bridge.opened("old", True)
    bridge.opened("plain", False)
    bridge.opened("new", True)
    assert bridge.available
    task = asyncio.create_task(bridge.request("read", {}))
    await wait_until(lambda: sent, within=5)
    assert sent[0]["kind"] == "notebook_request" and sent[0]["view_id"] == "new"
    assert bridge.replied({"request_id": sent[0]["id"], "ok": True, "result": {"cells": []}})
    assert await task == {"cells": []}
    assert not bridge.replied({"request_id": sent[0]["id"], "ok": True})  # a repeat


async def test_an_unanswered_request_is_sent_again_under_the_same_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("v", True)
    task = asyncio.create_task(bridge.request("edit", {"cell_id": "c"}))
    await wait_until(lambda: len(sent) >= 3, within=5)
    assert len({message["id"] for message in sent}) == 1
    bridge.replied({"request_id": sent[0]["id"], "ok": False,
                    "error": {"code": "changed", "message": "the cell changed"}})
    with pytest.raises(NotebookError) as raised:
        await task
    assert raised.value.code == "changed" and "the cell changed" in str(raised.value)


async def test_no_view_and_no_answer_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    bridge, _ = _bridge()
    bridge.opened("plain", False)
    assert not bridge.available
    with pytest.raises(NotebookError) as raised:
        await bridge.request("read", {})
    assert raised.value.code == "no_bridge" and "JupyterLab or Notebook 7" in str(raised.value)
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.02)
    bridge.opened("v", True)
    with pytest.raises(NotebookError) as raised:
        await bridge.request("read", {}, wait=0.1)
    assert raised.value.code == "no_answer"
    bridge.closed("v")
    assert not bridge.available


async def test_a_chat_view_on_a_page_with_the_extension_is_the_sessions_page(
        sent: SentMessages) -> None:
    session, _, _ = make_session([answer("ok")])
    view = ChatView(session)
    assert session.notebook_page is not None and not session.notebook_page.available
    view._on_custom_message(view, {"kind": "view_opened", "id": "r1", "view_id": "v1",
                                   "notebook_bridge": True}, [])
    assert session.notebook_page.available
    task = asyncio.create_task(session.notebook_page.request("read", {}))
    await wait_until(lambda: sent.of_kind("notebook_request"), within=5)
    request = sent.of_kind("notebook_request")[0]
    view._on_custom_message(view, {"kind": "notebook_reply", "id": "r2",
                                   "request_id": request["id"], "ok": True,
                                   "result": {"cells": [{"id": "a"}]}}, [])
    assert await task == {"cells": [{"id": "a"}]}
    view._on_custom_message(view, {"kind": "view_closed", "id": "r3", "view_id": "v1"}, [])
    assert not session.notebook_page.available
    view.unbind()
    assert session.notebook_page is None


async def test_a_view_in_no_notebook_is_passed_over_and_a_request_stays_with_its_view(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("cell", True)
    bridge.opened("output-view", True)  # JupyterLab's "New View for Output": no notebook
    task = asyncio.create_task(bridge.request("run", {"cell_id": "c"}))
    await wait_until(lambda: sent, within=5)
    assert sent[0]["view_id"] == "output-view"
    bridge.replied({"request_id": sent[0]["id"], "ok": False,
                    "error": {"code": "no_notebook", "message": "not in a notebook"}})
    await wait_until(lambda: any(m["view_id"] == "cell" for m in sent), within=5)
    moved = next(m for m in sent if m["view_id"] == "cell")
    assert moved["id"] != sent[0]["id"]
    bridge.opened("newer", True)  # opens while the run is in flight: the run stays put
    await wait_until(lambda: sum(m["id"] == moved["id"] for m in sent) >= 3, within=5)
    assert {m["view_id"] for m in sent if m["id"] == moved["id"]} == {"cell"}
    bridge.replied({"request_id": moved["id"], "ok": True, "result": {"status": "ok"}})
    assert await task == {"status": "ok"}
    bridge.closed("newer")
    assert bridge._views == {"cell": True, "output-view": False}


async def test_a_view_closing_before_it_answers_is_a_clear_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_page, "RESEND_EVERY", 0.05)
    bridge, sent = _bridge()
    bridge.opened("v", True)
    task = asyncio.create_task(bridge.request("run", {"cell_id": "c"}))
    await wait_until(lambda: sent, within=5)
    bridge.closed("v")
    with pytest.raises(NotebookError) as raised:
        await task
    assert raised.value.code == "no_answer" and "closed" in str(raised.value)


async def test_a_request_right_after_the_chat_is_made_waits_for_its_first_view(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Run All: the turn starts in the cell after the chat's, before the page drew it.
    bridge, sent = _bridge()
    task = asyncio.create_task(bridge.request("read", {}))
    await asyncio.sleep(0.1)
    assert not task.done() and not sent
    bridge.opened("v", True)
    await wait_until(lambda: sent, within=5)
    bridge.replied({"request_id": sent[0]["id"], "ok": True, "result": {"cells": []}})
    assert await task == {"cells": []}
    # Past the grace, with no view ever opened (nbclient), it does not wait.
    late, _ = _bridge()
    monkeypatch.setattr(notebook_page, "VIEW_GRACE", 0.0)
    with pytest.raises(NotebookError) as raised:
        await asyncio.wait_for(late.request("read", {}), 0.5)
    assert raised.value.code == "no_bridge"
