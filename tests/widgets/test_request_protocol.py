"""The request protocol between views and widgets: every request gets exactly one reply,
whatever its handler does; constructors refuse keyword arguments they do not know."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from neta_nb import Agent, AgentToolConfig, ScriptedProvider, SessionStore, ToolCatalog
from neta_nb.widgets import (
    BatchGrid,
    ChatView,
    SessionSidebar,
    SkillCard,
    ThinkingBlock,
    ThinkingLevelSelector,
    TodoCard,
    TokenStats,
    ToolCard,
    ToolConfigPanel,
)
from neta_nb.widgets.base import NetaWidget, RequestError, RequestHandler, handles

from ..support.timing import wait_until
from .conftest import SentMessages


class Probe(NetaWidget):
    """A widget whose handlers fail in every way a handler can."""

    @handles("echo")
    def _echo(self, request: Mapping[str, object]) -> dict[str, object]:
        return {"value": request.get("value")}

    @handles("refuse")
    def _refuse(self, _request: Mapping[str, object]) -> dict[str, object]:
        raise RequestError("not now")

    @handles("crash")
    def _crash(self, _request: Mapping[str, object]) -> dict[str, object]:
        return {"n": 1 // 0}

    @handles("crash_silently")
    def _crash_silently(self, _request: Mapping[str, object]) -> dict[str, object]:
        raise KeyError

    @handles("not_json")
    def _not_json(self, _request: Mapping[str, object]) -> dict[str, object]:
        return {"when": {1, 2}}

    @handles("surrogate")
    def _surrogate(self, _request: Mapping[str, object]) -> dict[str, object]:
        return {"text": "cut mid-character \ud83d", "rows": [{"\udc00key": "x"}]}

    @handles("nan")
    def _nan(self, _request: Mapping[str, object]) -> dict[str, object]:
        return {"ratio": math.nan}


def _ask(widget: NetaWidget, sent: SentMessages, kind: str, **payload: Any) -> dict[str, Any]:
    request_id = f"r{len(sent)}"
    widget._on_custom_message(widget, {"kind": kind, "id": request_id, **payload}, [])
    replies = [message for message in sent.of_kind("reply") if message["id"] == request_id]
    assert len(replies) == 1, replies
    return replies[0]


def test_a_handler_result_is_the_reply(sent: SentMessages) -> None:
    assert _ask(Probe(), sent, "echo", value=[1, "a"]) == {
        "kind": "reply", "id": "r0", "ok": True, "result": {"value": [1, "a"]}}


def test_a_request_error_is_an_error_reply_with_its_message(sent: SentMessages) -> None:
    assert _ask(Probe(), sent, "refuse") == {"kind": "reply", "id": "r0", "ok": False,
                                             "error": "not now"}


def test_any_other_exception_is_an_error_reply_and_is_logged(
        sent: SentMessages, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="neta_nb.widgets.base"):
        reply = _ask(Probe(), sent, "crash")
    assert reply == {"kind": "reply", "id": "r0", "ok": False,
                     "error": "ZeroDivisionError: integer division or modulo by zero"}
    [record] = caplog.records
    assert "'crash' request failed" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError
    # An exception without a message is named by its type alone.
    assert _ask(Probe(), sent, "crash_silently")["error"] == "KeyError"


@pytest.mark.parametrize("kind", ["not_json", "nan"])
def test_a_result_that_is_not_json_is_an_error_reply(sent: SentMessages, kind: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="neta_nb.widgets.base"):
        reply = _ask(Probe(), sent, kind)
    assert reply["ok"] is False
    assert reply["error"].startswith(("TypeError: ", "ValueError: ")), reply["error"]
    assert caplog.records


def test_a_lone_surrogate_in_a_result_reaches_the_page_as_a_replacement_character(
        sent: SentMessages) -> None:
    from jupyter_client.session import json_packer

    reply = _ask(Probe(), sent, "surrogate")
    assert reply["ok"] is True
    assert reply["result"] == {"text": "cut mid-character \ufffd", "rows": [{"\ufffdkey": "x"}]}
    json_packer(reply)  # what the kernel sends it with: would raise on a lone surrogate


def test_an_unknown_kind_is_an_error_reply(sent: SentMessages) -> None:
    assert _ask(Probe(), sent, "no_such_kind") == {
        "kind": "reply", "id": "r0", "ok": False, "error": "unknown request kind 'no_such_kind'"}


def test_a_failing_handler_of_a_real_widget_still_replies(
        sent: SentMessages, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(self: ChatView, request: Mapping[str, object]) -> dict[str, object]:
        raise RuntimeError("the store is locked")

    monkeypatch.setattr(ChatView._request_handlers["older"], "function", broken)
    with caplog.at_level(logging.ERROR, logger="neta_nb.widgets.base"):
        reply = _ask(ChatView(), sent, "older", before=3)
    assert reply == {"kind": "reply", "id": "r0", "ok": False,
                     "error": "RuntimeError: the store is locked"}


def test_handlers_are_registered_per_class() -> None:
    assert set(ChatView._request_handlers) == {"sync", "older", "command", "switch_agent",
                                               "view_opened", "view_closed", "full_text",
                                               "refresh", "take_over", "message_action",
                                               "back_from_fork", "notebook_reply",
                                               "open_panel", "side_panel"}
    # The jobs with an object of their own answer the rest.
    assert ChatView.request_kinds() == set(ChatView._request_handlers) | {
        "mention_candidates", "mention_preview", "error_action", "set_mode"}
    assert set(ToolCard._request_handlers) == {"full_text"}
    assert set(SkillCard._request_handlers) == {"full_text"}
    assert set(SessionSidebar._request_handlers) == {"open", "new_chat", "rename", "delete",
                                                     "undo_delete"}
    assert set(ThinkingBlock._request_handlers) == {"snapshot"}
    assert set(ToolConfigPanel._request_handlers) == {"set_tool", "bulk", "forget",
                                                      "dismiss_warnings", "preview",
                                                      "preview_as", "reset_preview",
                                                      "acknowledge_change"}
    assert set(BatchGrid._request_handlers) == {"open_row"}
    assert TodoCard._request_handlers == {}
    assert ToolCard.request_kinds() == {"full_text"}
    handler = ChatView._request_handlers["older"]
    assert isinstance(handler, RequestHandler) and handler is vars(ChatView)["_older"]


def test_a_subclass_adds_kinds_without_changing_its_parent(sent: SentMessages) -> None:
    class Louder(Probe):
        @handles("echo")
        def _shout(self, request: Mapping[str, object]) -> dict[str, object]:
            return {"value": str(request.get("value")).upper()}

    assert _ask(Louder(), sent, "echo", value="hi")["result"] == {"value": "HI"}
    assert _ask(Probe(), sent, "echo", value="hi")["result"] == {"value": "hi"}
    assert set(Louder._request_handlers) == set(Probe._request_handlers)


def test_a_handler_is_a_plain_method_on_an_instance() -> None:
    assert Probe()._echo({"value": 2}) == {"value": 2}


# --- constructors -----------------------------------------------------------------------

def _catalog() -> ToolCatalog:
    return ToolCatalog.demo()


CONSTRUCTORS: list[tuple[Callable[..., NetaWidget], str, str]] = [
    (TodoCard, "todoz", "todos"),
    (ToolCard, "nmae", "name"),
    (SkillCard, "precent", "percent"),
    (ThinkingBlock, "txt", "text"),
    (TokenStats, "contxt", "context"),
    (lambda **kw: ThinkingLevelSelector("anthropic", "claude-sonnet-4-6", **kw), "levle",
     "level"),
    (lambda **kw: ToolConfigPanel(_catalog(), AgentToolConfig(), **kw), "scene_", "scene"),
    (ChatView, "agens", "agents"),
    (ChatView, "sesion", "session"),
    (lambda **kw: SessionSidebar(SessionStore(":memory:"), **kw), "chta", "chat"),
    # Made outside a loop, the run waits for `result()`: nothing runs here.
    (lambda **kw: BatchGrid(Agent("a", model=ScriptedProvider()).map(["x"]), **kw),
     "chat_hieght", "chat_height"),
]


@pytest.mark.parametrize(("build", "typo", "meant"), CONSTRUCTORS)
def test_a_mistyped_keyword_is_a_type_error_naming_the_closest_name(
        build: Callable[..., NetaWidget], typo: str, meant: str) -> None:
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{typo}'; "
                                        rf"did you mean '{meant}'\?"):
        build(**{typo: None})


def test_a_keyword_like_nothing_lists_what_the_widget_takes() -> None:
    with pytest.raises(TypeError, match=r"TodoCard\(\) got an unexpected keyword argument "
                                        r"'xyzzy'; this widget takes collapsed, lang, layout, "
                                        r"paused, store, todos$"):
        TodoCard(xyzzy=1)


def test_traits_parameters_and_ipywidgets_options_are_accepted() -> None:
    card = TodoCard(todos=[{"id": "1", "content": "a", "status": "pending"}], collapsed=True,
                    lang="zh-CN", layout={"width": "300px"}, tooltip="plan")
    assert (card.collapsed, card.lang, card.layout.width) == (True, "zh-CN", "300px")
    assert ChatView(window=5, flush_interval=0.1, agents=())._window == 5
    assert ThinkingLevelSelector(supplier="anthropic", model="claude-sonnet-4-6").levels


def test_a_subclass_accepts_its_own_and_its_parents_parameters() -> None:
    class Titled(TodoCard):
        def __init__(self, title: str = "", **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.title = title

    card = Titled(title="Plan", todos=[])
    assert card.title == "Plan"
    with pytest.raises(TypeError, match="did you mean 'title'"):
        Titled(titel="Plan")


def test_a_delegate_answers_its_kinds_on_its_own_object(sent: SentMessages) -> None:
    """A request the widget hands to a job's object is answered by that object (its own
    self), errors included; a kind nobody answers is still unknown."""
    chat = ChatView()
    assert _ask(chat, sent, "set_mode", mode="plan") == {
        "kind": "reply", "id": "r0", "ok": False,
        "error": "this chat's agent offers no session modes"}
    reply = _ask(chat, sent, "mention_candidates", prefix="x")
    assert reply["ok"] is False and "no session" in reply["error"]
    assert _ask(chat, sent, "no_such_kind")["error"] == "unknown request kind 'no_such_kind'"


async def test_an_answer_that_waits_and_is_cancelled_is_still_an_error_reply(
        sent: SentMessages) -> None:
    """A handler that waits (on the page, say) for something that is cancelled instead of
    answered: the view still gets its one reply, an error saying so."""
    waited: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()

    class Waiting(NetaWidget):
        @handles("later")
        def _later(self, _request: Mapping[str, object]) -> Awaitable[dict[str, object]]:
            return waited

    widget = Waiting()
    widget._on_custom_message(widget, {"kind": "later", "id": "w1"}, [])
    await asyncio.sleep(0)
    assert sent.of_kind("reply") == []
    waited.cancel()
    await wait_until(lambda: sent.of_kind("reply"), within=5)
    assert sent.of_kind("reply") == [{
        "kind": "reply", "id": "w1", "ok": False,
        "error": "the 'later' request was stopped before it was answered"}]
    widget.close()
