"""Widget state stays small whatever the session holds (issue 21 item 6): long results,
arguments and texts are previews that say how much is hidden, the window of messages fits
a byte budget, the whole text comes from the kernel on request, and the static forms are
bounded too."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog, tool
from neta_nb.events import ToolCallEvent, ToolResultEvent
from neta_nb.messages import Message, TextPart, ToolCallPart, ToolExecution
from neta_nb.widgets import ChatView, SkillCard, ToolCard
from neta_nb.widgets.base import RequestError
from neta_nb.widgets.state_bounds import RESULT_CHARS, TEXT_CHARS, fit_window, preview_args

from ..support.sessions import FakeProvider, answer, calls

FIVE_MB = 5 * 1024 * 1024
STATE_LIMIT = 256 * 1024
BIG_RESULT = "".join(f"line {n:07d} of a very long tool output\n" for n in range(140_000))
assert len(BIG_RESULT) > FIVE_MB


@tool(core=True, label="Dump table")
def dump_table() -> str:
    """Returns the whole table."""
    return BIG_RESULT


CODE_TRAITS = ("_esm",)
"""The widget's code loader (under 2 KB; the bundle itself is one shared model per
kernel), the same whatever the session holds; measured apart."""


def state_bytes(widget: Any) -> int:
    """The widget's state as the frontend gets it and a saved notebook holds it, without
    its code."""
    state = {k: v for k, v in widget.get_state().items() if k not in CODE_TRAITS}
    return len(json.dumps(state, ensure_ascii=False, default=str).encode("utf-8"))


async def run_five_mb_session(store: SessionStore | None = None) -> tuple[AgentSession, ChatView]:
    provider = FakeProvider([calls(("c1", "dump_table", {})), answer("The table is dumped.")])
    agent = Agent("analyst", model=provider, max_tool_result_chars=10_000_000)
    session = AgentSession(agent, ToolCatalog([dump_table]), store, provider=provider)
    chat = ChatView(session)
    await session.run("Dump the table")
    return session, chat


async def test_a_five_megabyte_result_keeps_the_chat_state_small() -> None:
    session, chat = await run_five_mb_session()
    (card,) = [c for item in chat.messages for c in item.get("cards", [])]
    # The session has all of it; the state has a preview saying how long the whole is.
    assert session.messages[1].metadata.tool_executions[0].result == BIG_RESULT
    assert card["result"] == BIG_RESULT[:RESULT_CHARS]
    assert card["result_chars"] == len(BIG_RESULT)
    assert state_bytes(chat) < STATE_LIMIT
    # With its code too, far from the 512 KB a saved notebook may take.
    assert len(json.dumps(chat.get_state(), default=str)) < 2 * STATE_LIMIT
    # A new view asks for a snapshot: bounded the same way.
    assert len(json.dumps(chat._sync({}))) < STATE_LIMIT
    # ... and so is a chat view opened on the stored session later (bind, not a turn end).
    assert state_bytes(ChatView(session)) < STATE_LIMIT


async def test_the_whole_result_comes_from_the_kernel_on_request(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    session, chat = await run_five_mb_session(store)
    (item,) = [i for i in chat.messages if i.get("cards")]
    reply = chat._full_text({"message_id": item["id"], "card_id": "c1", "field": "result"})
    assert reply["text"] == BIG_RESULT
    # The same from a session resumed from the store in a new chat view.
    resumed = ChatView(AgentSession.resume(session.id, store=store, catalog=session.catalog))
    assert state_bytes(resumed) < STATE_LIMIT
    assert resumed._full_text({"message_id": item["id"], "card_id": "c1",
                               "field": "result"})["text"] == BIG_RESULT
    # Through the request protocol: an ok reply, checked as JSON like every reply.
    assert chat._reply("full_text", "r1", {"message_id": item["id"], "card_id": "c1",
                                           "field": "result"})["ok"] is True


async def test_a_fetch_for_an_unknown_id_or_field_gets_an_error_reply() -> None:
    _, chat = await run_five_mb_session()
    (item,) = [i for i in chat.messages if i.get("cards")]
    for request, error in [
        ({"message_id": "m_nope", "field": "text"}, "message 'm_nope' is not in this session"),
        ({"message_id": item["id"], "card_id": "c_nope", "field": "result"},
         "has no tool or skill call 'c_nope'"),
        ({"message_id": item["id"], "card_id": "c1", "field": "secret"}, "no field 'secret'"),
        ({"message_id": 3, "field": "text"}, "needs 'message_id' and 'field' strings"),
    ]:
        with pytest.raises(RequestError, match=error):
            chat._full_text(request)  # type: ignore[arg-type]
        reply = chat._reply("full_text", "r2", request)
        assert reply["ok"] is False and error.split("'")[0] in reply["error"]


def history_message(index: int, *, text_chars: int = 0, args_chars: int = 0,
                    cards: int = 1) -> list[Message]:
    calls_made = [ToolCallPart(id=f"c{index}_{n}", name="write", args={
        "path": f"out{n}.txt", "content": "y" * args_chars}) for n in range(cards)]
    message = Message.assistant([TextPart(text=f"answer {index} " + "z" * text_chars),
                                 *calls_made])
    message.metadata.tool_executions = [
        ToolExecution(id=call.id, name="write", label="Write file", args=call.args,
                      status="done", result="r" * 50_000) for call in calls_made]
    return [Message.user(f"question {index}"), message]


def test_long_texts_and_arguments_are_previews_with_their_length() -> None:
    history = history_message(0, text_chars=300_000, args_chars=FIVE_MB)
    history[0] = Message.user("u" * 100_000)
    session = AgentSession(Agent("a", model=FakeProvider([])), ToolCatalog())
    session.state.history.load(history, history)
    chat = ChatView(session)
    user, assistant = chat.messages
    assert len(user["text"]) == TEXT_CHARS and user["text_chars"] == 100_000
    assert len(assistant["text"]) == TEXT_CHARS and assistant["text_chars"] > 300_000
    (card,) = assistant["cards"]
    assert card["args"]["path"] == "out0.txt"
    assert card["args"]["content"].startswith("yyy") and len(card["args"]["content"]) < 300
    assert card["args_chars"] > FIVE_MB
    whole = chat._full_text({"message_id": assistant["id"], "card_id": "c0_0",
                             "field": "args"})["text"]
    assert json.loads(whole)["content"] == "y" * FIVE_MB
    assert chat._full_text({"message_id": user["id"], "field": "text"})["text"] == "u" * 100_000
    assert state_bytes(chat) < STATE_LIMIT


def test_a_window_of_big_messages_fits_the_budget_and_the_rest_loads_as_older() -> None:
    history = [m for n in range(50) for m in history_message(n, text_chars=60_000, cards=3)]
    session = AgentSession(Agent("a", model=FakeProvider([])), ToolCatalog())
    session.state.history.load(history, history)
    chat = ChatView(session)
    assert state_bytes(chat) < STATE_LIMIT
    assert chat.has_older is True and 0 < len(chat.messages) < 100
    assert chat.messages[-1]["text"].startswith("answer 49")
    page = chat._older({"before": chat.messages[0]["index"]})
    assert page["messages"] and page["messages"][-1]["index"] == chat.messages[0]["index"] - 1


def test_one_message_with_hundreds_of_calls_keeps_its_cards_without_previews() -> None:
    history = history_message(0, cards=600)
    session = AgentSession(Agent("a", model=FakeProvider([])), ToolCatalog())
    session.state.history.load(history, history)
    chat = ChatView(session)
    assert state_bytes(chat) < STATE_LIMIT
    cards = chat.messages[-1]["cards"]
    assert len(cards) == 600 and cards[0]["result"] == "" and cards[0]["result_chars"] == 50_000


def test_arguments_nested_hundreds_deep_get_a_preview_not_a_crash() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5_000):
        node["x"] = {}
        node = node["x"]
    fields: dict[str, Any] = {"args": deep}
    preview_args(fields)
    assert fields["args_chars"] == -1  # too deep to measure; the preview is cut
    assert len(json.dumps(fields["args"])) < 200


def test_fit_window_keeps_the_newest_items() -> None:
    items = [{"id": str(n), "text": "x" * 1_000} for n in range(10)]
    kept, cut = fit_window(items, budget=3_500)
    assert [i["id"] for i in kept] == ["7", "8", "9"] and cut is True
    assert fit_window(items[:2], budget=3_500) == (items[:2], False)


async def test_static_fallbacks_are_bounded_and_say_what_was_cut() -> None:
    _, chat = await run_five_mb_session()
    text = chat._fallback_text()
    assert f"[Dump table · Done] (result of {len(BIG_RESULT):,} characters)" in text
    assert len(chat._fallback_html()) < 64 * 1024
    history = [m for n in range(50) for m in history_message(n, text_chars=30_000)]
    session = AgentSession(Agent("a", model=FakeProvider([])), ToolCatalog())
    session.state.history.load(history, history)
    big = ChatView(session)
    for form in (big._fallback_text(), big._fallback_html()):
        assert len(form) < 64 * 1024
        assert "earlier messages not shown" in form
    assert "[Showing 20,000 of 30,010 characters]" in big._fallback_text()
    assert big.messages[-1]["text"].startswith("answer 49")
    assert "answer 49" in big._fallback_text()


def test_standalone_tool_and_skill_cards_keep_previews_in_state() -> None:
    card = ToolCard.from_event(ToolCallEvent(id="t", name="write", label="Write",
                                             args={"content": "y" * FIVE_MB}))
    card.apply(ToolResultEvent(id="t", name="write", result=BIG_RESULT))
    assert state_bytes(card) < 16 * 1024
    assert card.result_chars == len(BIG_RESULT) and card.args_chars > FIVE_MB
    assert card._full_text({"field": "result"})["text"] == BIG_RESULT
    assert json.loads(card._full_text({"field": "args"})["text"]) == {"content": "y" * FIVE_MB}
    assert "Showing 2,000 of" in card._fallback_text()
    assert len(card._fallback_html()) < 16 * 1024
    with pytest.raises(RequestError, match="'result' or 'args'"):
        card._full_text({"field": "other"})
    small = ToolCard(name="add", args={"a": 1}, result="3")
    assert (small.result, small.result_chars, small.args_chars) == ("3", 0, 0)

    skill = SkillCard(name="report", status="done", result=BIG_RESULT, step="s" * 5_000)
    assert state_bytes(skill) < 16 * 1024 and skill.result_chars == len(BIG_RESULT)
    assert skill._full_text({"field": "result"})["text"] == BIG_RESULT
    assert "Showing 2,000 of" in skill._fallback_text()


def test_the_views_know_the_message_preview_bounds() -> None:
    # A view keeps a preview of a long text it streamed itself (the kernel does not send it
    # again): the same bound as the kernel's, or saved widget state would differ by who
    # streamed the answer.
    from neta_nb.widgets.state_bounds import TEXT_CHARS, THINKING_CHARS

    source = (Path(__file__).resolve().parents[2] / "js" / "src" / "chat" / "chat-message-view.ts"
              ).read_text()
    match = re.search(r"PREVIEW_CHARS = \{ text: ([\d_]+), thinking: ([\d_]+) \}", source)
    assert match is not None
    assert (int(match[1]), int(match[2])) == (TEXT_CHARS, THINKING_CHARS)
