"""Outside clients' requests in the chats of the notebook, as a careless or crafted use
meets them: a client's review view turned to another chat, a command naming a client
that waits for nothing, one id for a client's request and the chat's own."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from neta_nb.runtime.session import AgentSession
from neta_nb.widgets import ChatView
from neta_nb.widgets.mcp_review import McpReview
from neta_nb.widgets.outside_reviews import outside_reviews

from ..support.sessions import answer, calls, make_session
from ..support.timing import wait_until
from .conftest import SentMessages


def _client_with_its_review() -> tuple[AgentSession, ChatView]:
    """A client's session that will ask to run ``guarded_op`` (then answers "ok"), and its
    review view, open on a page."""
    client, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    review = McpReview()
    review.show(client)
    view = review.views[client.agent.name]
    view._view_opened({"view_id": "v"})
    return client, view


def test_a_review_view_turned_to_another_chat_publishes_no_one_elses_request(
        sent: SentMessages) -> None:
    review = McpReview()
    client, _, _ = make_session([])
    review.show(client)
    view = review.views[client.agent.name]
    waiting = [{"id": "call_g", "name": "run_cell", "args": {}}]
    outside_reviews.publish("s_gemini", "gemini", waiting, lambda *_: True)
    try:
        view.bind(make_session([])[0])  # the user opens another chat in the client's view
        shown = outside_reviews.items("s_user")
        assert [(item["id"], item["client"]) for item in shown] == [("call_g", "gemini")]
    finally:
        outside_reviews.publish("s_gemini", "gemini", [], lambda *_: True)
        outside_reviews.publish(client.id, client.agent.name, [], lambda *_: True)
        view.close()



async def test_a_clients_request_and_the_users_own_with_one_id_are_answered_apart(
        sent: SentMessages) -> None:
    """A card names its client; a command naming one answers that client's request only,
    never the chat's own with the same id, and a client that waits for nothing is an
    error that answers nothing."""
    asking, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    chat = ChatView(asking)
    chat._view_opened({"view_id": "v"})
    task = asking.start("go")
    answered: list[tuple[str, str]] = []

    def decide(call_id: str, decision: Any, _path: Any, _text: Any) -> bool:
        answered.append((call_id, decision))
        return True

    outside_reviews.publish("s_codex", "codex", [{"id": "g", "name": "run_cell", "args": {}}],
                            decide)
    try:
        await wait_until(lambda: len(chat.approvals) == 2)
        assert [a.get("client") for a in chat.approvals] == [None, "codex"]

        def command(**extra: Any) -> dict[str, Any]:
            sent = {"type": "approve", "id": "g", "decision": "reject", **extra}
            return dict(chat._reply("command", "r", {"command": sent}))

        assert "gemini's request is no longer waiting" in command(client="gemini")["error"]
        crafted: list[object] = ["g", "", 0, {}]
        for path in crafted:
            assert "'subagent' must be a list" in command(client="codex",
                                                         subagent=path)["error"]
        assert answered == []
        assert command(client="codex")["ok"] is True
        assert answered == [("g", "reject")] and asking.running  # its own still waits
        assert command(decision="allow_once")["ok"] is True
        assert (await task) is not None and asking.messages[-1].text == "ok"
        assert answered == [("g", "reject")]
    finally:
        outside_reviews.publish("s_codex", "codex", [], decide)
        chat.close()


async def test_a_clients_request_stays_in_the_users_chat_while_its_view_shows_another(
        sent: SentMessages) -> None:
    client, view = _client_with_its_review()
    chat = ChatView(make_session([])[0])
    task = client.start("go")
    try:
        await wait_until(lambda: bool(chat.approvals))
        [item] = chat.approvals
        view.bind(make_session([])[0])
        assert chat.approvals == [item]
        assert view.approvals == []  # a review view shows no one else's, even now
        view.bind(client)
        assert chat.approvals == [item] and view.approvals == [
            {k: v for k, v in item.items() if k != "client"}]
        command = {"type": "approve", "id": "g", "decision": "allow_once",
                   "client": client.agent.name}
        assert chat._reply("command", "r", {"command": command})["ok"] is True
        assert (await task) is not None and client.messages[-1].text == "ok"
        await wait_until(lambda: not chat.approvals)
    finally:
        outside_reviews.publish(client.id, client.agent.name, [], lambda *_: True)
        view.close()
        chat.close()


async def test_a_chat_the_user_turns_to_a_clients_session_still_shows_the_others(
        sent: SentMessages) -> None:
    """``chat.bind(server.clients["codex"])`` in the user's chat: codex's requests are its
    own there (once, unmarked), and the other clients' still show and are decided there;
    only the clients' review views show no one else's."""
    client, view = _client_with_its_review()
    chat = ChatView(make_session([])[0])
    task = client.start("go")
    other = {"id": "call_o", "name": "run_cell", "args": {}}
    outside_reviews.publish("s_gemini", "gemini", [other], lambda *_: True)
    try:
        await wait_until(lambda: len(chat.approvals) == 2)
        chat.bind(client)
        assert [(a["id"], a.get("client")) for a in chat.approvals] == [
            ("g", None), ("call_o", "gemini")]
        assert chat.hosts_outside is True
        assert [a["id"] for a in view.approvals] == ["g"] and view.hosts_outside is False
        chat._command({"command": {"type": "approve", "id": "g", "decision": "allow_once"}})
        assert (await task) is not None and client.messages[-1].text == "ok"
    finally:
        outside_reviews.publish("s_gemini", "gemini", [], lambda *_: True)
        outside_reviews.publish(client.id, client.agent.name, [], lambda *_: True)
        view.close()
        chat.close()


def test_a_client_that_waits_for_nothing_is_let_go() -> None:
    """A client whose requests were all answered (its view closed, its server stopped)
    is not kept alive by the registry: its ``decide`` holds its whole session."""

    class Decide:
        def __call__(self, *_: Any) -> bool:
            return True

    decide = Decide()
    held = weakref.ref(decide)
    outside_reviews.publish("s_gone", "gone", [{"id": "x", "name": "run_cell", "args": {}}],
                            decide)
    assert [item["client"] for item in outside_reviews.items("s_user")] == ["gone"]
    outside_reviews.publish("s_gone", "gone", [], decide)
    del decide
    gc.collect()
    assert held() is None
    assert outside_reviews.items("s_user") == []


def test_a_listener_stopped_by_another_is_not_called_again() -> None:
    """A chat that closes while the registry tells of a change (another chat's answer to
    it closed it) stops listening for good: not called later in that change, nor after."""
    called: list[str] = []
    stops: dict[str, Any] = {}

    class Chat:
        def __init__(self, name: str, closes: str | None = None) -> None:
            self.name, self.closes = name, closes

        def changed(self) -> None:
            called.append(self.name)
            if self.closes is not None:
                stops[self.closes]()

    first, second, third = Chat("first"), Chat("second", closes="first"), Chat("third")
    fourth = Chat("fourth", closes="third")
    for chat in (first, second, third, fourth):
        stops[chat.name] = outside_reviews.listen(chat.changed)
    waiting = [{"id": "x", "name": "run_cell", "args": {}}]
    try:
        outside_reviews.publish("s_one", "one", waiting, lambda *_: True)
        outside_reviews.publish("s_one", "one", [], lambda *_: True)
    finally:
        for stop in stops.values():
            stop()
    assert called == ["first", "second", "third", "fourth", "second", "fourth"]
