"""Sub-agent cards (issue 15, the UI half): a child's run nested in the parent's message at
its ``delegate`` call, streamed through the chat view's own batches (ops with a ``path``),
a snapshot that carries the child's state mid-run, the per-child Stop command, a child's
approval labelled with its name, bounded state, the static forms, the nested card rebuilt
from the stored child session on resume, and the standalone ``SubagentCard``.

The sub-agent events come from ``tests/support/crew.py``: a ``delegate`` tool that
publishes them through the parent session's own event hub, in the runtime's order. It
stands in for the runtime half of issue 15 until that lands; the events, their order and
the stored ``SubagentRun`` are the contract both halves share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.events import (
    Event,
    SubagentEndEvent,
    SubagentEvent,
    SubagentStartEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from neta_nb.messages import Message, SubagentRun, TextPart, ToolCallPart, ToolExecution
from neta_nb.runtime.projection import ConversationProjection
from neta_nb.widgets import ChatView, SubagentCard
from neta_nb.widgets.base import RequestError
from neta_nb.widgets.chat.drawing.batcher import OpBatcher
from neta_nb.widgets.chat.drawing.render import render_message
from neta_nb.widgets.chat.wire import BatchMessage, ChatItem, CommandReply
from neta_nb.widgets.state_bounds import SUBAGENT_BYTES, SUBAGENT_ITEMS, item_bytes

from ..support.crew import (
    ChildHistory,
    ChildScript,
    CrewStandIn,
    Step,
    approval_steps,
    complete_stream,
    plan,
    research_steps,
    usage,
)
from ..support.sessions import FakeProvider, answer, calls, plus
from ..support.timing import ManualScheduler, wait_until
from .conftest import SentMessages

TASK = "Find sources"


def crew_session(children: dict[str, ChildScript], *, parallel: bool = False,
                 store: SessionStore | None = None) -> tuple[AgentSession, CrewStandIn]:
    crew = CrewStandIn(children)
    delegations = [(f"d{n}", "delegate", {"agent": name, "task": f"{TASK} ({name})"
                                          if parallel else TASK})
                   for n, name in enumerate(children, 1)]
    provider = FakeProvider([calls(*delegations), answer("All done.")])
    session = AgentSession(Agent("planner", model=provider), ToolCatalog([crew.tool, plus]),
                           store, provider=provider)
    crew.install(session)
    return session, crew


def ops_of(sent: SentMessages) -> list[dict[str, Any]]:
    seqs = [b["seq"] for b in sent.of_kind("batch")]
    assert seqs == list(range(1, len(seqs) + 1)), "batches are numbered without gaps"
    return [op for batch in sent.of_kind("batch") for op in batch["ops"]]


def card_of(items: list[Any], call_id: str) -> dict[str, Any]:
    for item in items:
        for card in item.get("cards") or []:
            if card["id"] == call_id:
                return dict(card)
    raise AssertionError(f"no card {call_id}")


def transcript(part: Mapping[str, Any]) -> list[ChatItem]:
    """A sub-agent part's messages, there whenever the part is whole (``None`` only in a
    streamed update)."""
    messages: list[ChatItem] | None = part["messages"]
    assert messages is not None, "no transcript in this part"
    return messages


def test_nested_ops_merge_per_transcript_and_render_nested_items_when_sent() -> None:
    sent: list[BatchMessage] = []
    # Stand-ins for rendered items: the batcher passes them on without reading them.
    nested: dict[tuple[tuple[str, ...], str], Any] = {(("d1",), "m"): {"id": "m", "v": 1}}
    scheduler = ManualScheduler()
    batcher = OpBatcher(sent.append, lambda _id: None,
                        nested_source=lambda path, item_id: nested.get((path, item_id)),
                        interval=0.03, clock=scheduler.clock, schedule=scheduler)
    batcher.text("text", "first")  # goes at once; the rest waits for the frame
    # Two children streaming side by side, and the parent: interleaved deltas of one
    # transcript merge only while nothing of another comes between.
    for delta, path in (("a", ("d1",)), ("b", ("d1",)), ("c", ("d2",)), ("d", ("d2",)),
                        ("e", ()), ("f", ("d1",)), ("g", ("d1", "g1"))):
        batcher.text("text", delta, path)
    batcher.upsert("m", ("d1",))
    nested[(("d1",), "m")] = {"id": "m", "v": 2}
    batcher.upsert("m", ("d1",))  # once per batch, rendered when it leaves
    batcher.upsert("m", ("d2",))  # no such item in d2: nothing to draw
    batcher.op("end", ("d1",), id="m")
    scheduler.advance(0.05)
    assert sent[1]["ops"] == [
        {"op": "text", "text": "ab", "path": ["d1"]},
        {"op": "text", "text": "cd", "path": ["d2"]},
        {"op": "text", "text": "e"},
        {"op": "text", "text": "f", "path": ["d1"]},
        {"op": "text", "text": "g", "path": ["d1", "g1"]},
        {"op": "item", "item": {"id": "m", "v": 2}, "path": ["d1"]},
        {"op": "end", "id": "m", "path": ["d1"]}]
    assert len(sent) == 2  # one batch per frame, whatever the nesting


async def test_a_child_streams_inside_the_parents_message_through_the_same_batches(
        sent: SentMessages) -> None:
    session, _ = crew_session({"researcher": ChildScript(research_steps())})
    # A long interval: everything after the first batch waits for the turn's end flush,
    # so what merges into one batch does not depend on the machine's speed.
    chat = ChatView(session, flush_interval=60)
    await session.run("Plan it")
    ops = ops_of(sent)
    # The delegate call's card is a sub-agent card in every update that carries it: one
    # node from the first frame to the last (never a tool card replaced later).
    kinds = [card["kind"] for op in ops if op["op"] == "item"
             for card in op["item"].get("cards") or [] if card["id"] == "d1"]
    assert kinds and set(kinds) == {"subagent"}
    nested = [op for op in ops if op.get("path")]
    assert nested and {tuple(op["path"]) for op in nested} == {("d1",)}
    # The child's answer streamed as text ops of its own transcript, deltas merged.
    assert [op["text"] for op in nested if op["op"] == "text"] == ["Found **three** sources."]
    assert [op["text"] for op in nested if op["op"] == "thinking"] == ["Where to look first…"]
    # Top-level ops carry no path; the parent's own answer is among them.
    assert [op["text"] for op in ops if op["op"] == "text" and not op.get("path")] == [
        "All done."]
    # A streamed update of the parent's message says "keep your transcript".
    streamed = [card["subagent"]["messages"] for op in ops if op["op"] == "item"
                for card in op["item"].get("cards") or [] if card["id"] == "d1"]
    assert set(map(type, streamed)) == {type(None)}
    # The traits hold the whole card at the turn's end: what a reload or a saved notebook
    # shows.
    card = card_of(chat.messages, "d1")
    part = card["subagent"]
    assert (part["agent"], part["task"], part["status"], part["plan"]) == (
        "researcher", TASK, "done", {"done": 2, "total": 2})
    assert part["tokens"] == {"input_tokens": 650, "output_tokens": 90, "api_calls": 3}
    assert part["activity"] is None and part["live"] is None
    first, second = part["messages"]
    assert first["thinking"] == "Where to look first…"
    assert [(c["kind"], c["name"], c["status"]) for c in first["cards"]] == [
        ("tool", "web_search", "done"), ("skill", "summarize", "done")]
    assert second["text"] == "Found **three** sources."
    assert card["result"] == "Found **three** sources."  # the delegate result


async def test_a_view_resynced_mid_child_gets_the_childs_state(sent: SentMessages) -> None:
    at_tool, at_text, go_on = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def pause(reached: asyncio.Event) -> None:
        reached.set()
        await go_on.wait()
        go_on.clear()

    steps: list[Step] = [
        plan(0, 2),
        ToolCallEvent(id="c1", name="web_search", label="Web search", args={"q": "x"}),
        lambda: pause(at_tool),
        ToolResultEvent(id="c1", name="web_search", result="3 results"), plan(1, 2),
        usage(300, 40, 1), TokenEvent(text="Found "), TokenEvent(text="three"),
        lambda: pause(at_text), TokenEvent(text=" sources.")]
    session, _ = crew_session({"researcher": ChildScript(steps)})
    chat = ChatView(session)
    task = session.start("Plan it")
    await asyncio.wait_for(at_tool.wait(), 10)
    part = card_of(chat._sync({})["messages"], "d1")["subagent"]
    # The status line: the tool it runs now and its plan.
    assert (part["status"], part["activity"], part["plan"]) == (
        "running", "Web search", {"done": 0, "total": 2})
    assert [c["status"] for c in part["messages"][0]["cards"]] == ["running"]
    go_on.set()
    await asyncio.wait_for(at_text.wait(), 10)
    snapshot = chat._sync({})
    part = card_of(snapshot["messages"], "d1")["subagent"]
    assert part["activity"] is None and part["plan"] == {"done": 1, "total": 2}
    # The response it is streaming comes whole with the snapshot, inside the card.
    assert part["live"] is not None and part["live"]["text"] == "Found three"
    assert snapshot["live"] is None  # the parent itself streams nothing now
    go_on.set()
    await asyncio.wait_for(task, 10)
    part = card_of(chat.messages, "d1")["subagent"]
    assert part["messages"][-1]["text"] == "Found three sources." and part["live"] is None


async def test_per_child_stop_stops_only_that_child(sent: SentMessages) -> None:
    reached, release = asyncio.Event(), asyncio.Event()

    async def wait_for_stop(script: ChildScript) -> None:
        reached.set()
        await script.stopped.wait()
        release.set()

    slow = ChildScript([TokenEvent(text="Looking")])
    slow.steps.append(lambda: wait_for_stop(slow))
    slow.steps.append(TokenEvent(text=" never sent"))
    quick = ChildScript([lambda: release.wait(), TokenEvent(text="Quick answer"),
                         usage(10, 5, 1)])
    session, _ = crew_session({"researcher": slow, "coder": quick}, parallel=True)
    chat = ChatView(session)
    task = session.start("Plan it")
    await asyncio.wait_for(reached.wait(), 10)
    with pytest.raises(RequestError, match="no sub-agent"):
        chat._command({"command": {"type": "stop", "subagent": "d9"}})
    # What the page's per-child Stop sends (the JS sends exactly this command).
    reply = cast("CommandReply", chat._command({"command": {"type": "stop", "subagent": "d1"}}))
    assert reply["running"] is True  # the parent goes on
    assert slow.stopped.is_set() and not quick.stopped.is_set()
    await asyncio.wait_for(task, 10)
    researcher = card_of(chat.messages, "d1")["subagent"]
    coder = card_of(chat.messages, "d2")["subagent"]
    assert researcher["status"] == "cancelled" and coder["status"] == "done"
    assert researcher["messages"][-1]["interrupted"] == "cancelled"
    assert coder["messages"][-1]["text"] == "Quick answer"
    with pytest.raises(RequestError, match="no sub-agent"):  # over now
        chat._command({"command": {"type": "stop", "subagent": "d2"}})


async def test_a_childs_approval_request_is_labelled_with_its_name(sent: SentMessages) -> None:
    gate = asyncio.Event()
    session, _ = crew_session({"coder": ChildScript(approval_steps("w1", gate.wait))})
    chat = ChatView(session)
    task = session.start("Plan it")
    await wait_until(lambda: bool(chat.approvals))
    (approval,) = chat.approvals
    assert (approval["id"], approval["name"], approval["agent"], approval["path"]) == (
        "w1", "write_file", "coder", ["d1"])
    part = card_of(chat._sync({})["messages"], "d1")["subagent"]
    assert [c["status"] for c in part["messages"][0]["cards"]] == ["waiting"]
    gate.set()
    await asyncio.wait_for(task, 10)
    assert chat.approvals == []  # its child is over: nothing left to answer


async def test_a_grandchild_nests_inside_its_parents_card(sent: SentMessages) -> None:
    grandchild: list[Event] = [TokenEvent(text="deep answer"), usage(5, 2, 1)]
    steps: list[Any] = [
        ToolCallEvent(id="g1", name="delegate", label="Delegate",
                      args={"agent": "checker", "task": "Check"}),
        SubagentStartEvent(id="g1", agent="checker", task="Check"),
        *[SubagentEvent(id="g1", event=e) for e in complete_stream(grandchild, "Check")],
        SubagentEndEvent(id="g1", agent="checker", status="done", result="deep answer"),
        ToolResultEvent(id="g1", name="delegate", result="deep answer"),
        TokenEvent(text="child answer")]
    session, _ = crew_session({"researcher": ChildScript(steps)})
    chat = ChatView(session, flush_interval=60)
    await session.run("Plan it")
    paths = {tuple(op["path"]) for op in ops_of(sent) if op.get("path")}
    assert paths == {("d1",), ("d1", "g1")}
    child = card_of(chat.messages, "d1")["subagent"]
    grand = card_of(child["messages"], "g1")
    assert grand["kind"] == "subagent" and grand["subagent"]["agent"] == "checker"
    assert grand["subagent"]["messages"][-1]["text"] == "deep answer"
    assert child["messages"][-1]["text"] == "child answer"


async def test_a_long_child_keeps_its_newest_steps_in_state(sent: SentMessages) -> None:
    steps: list[Any] = []
    for n in range(SUBAGENT_ITEMS + 15):
        steps += [TokenEvent(text=f"step {n} " + "x" * 2000), usage(10 * n, 5, n + 1)]
    session, _ = crew_session({"researcher": ChildScript(steps)})
    chat = ChatView(session)
    await session.run("Plan it")
    part = card_of(chat.messages, "d1")["subagent"]
    assert part["has_older"] is True
    assert len(part["messages"]) <= SUBAGENT_ITEMS
    assert sum(item_bytes(m) for m in part["messages"]) <= SUBAGENT_BYTES
    assert part["messages"][-1]["text"].startswith(f"step {SUBAGENT_ITEMS + 14} ")
    # The whole of a cut text stays in the kernel, fetched by path.
    first_kept = part["messages"][0]["id"]
    whole = chat._full_text({"message_id": first_kept, "field": "text", "path": ["d1"]})
    assert whole["text"].startswith("step ") and len(whole["text"]) > 2000
    with pytest.raises(RequestError):
        chat._full_text({"message_id": first_kept, "field": "text",  # a bad path on purpose
                         "path": "d1"})  # type: ignore[typeddict-item]


async def test_the_static_forms_mention_the_sub_agent_runs(sent: SentMessages) -> None:
    session, _ = crew_session({"researcher": ChildScript(research_steps())})
    chat = ChatView(session)
    await session.run("Plan it")
    line = f"↳ [researcher (Done): {TASK}] Found **three** sources."
    assert line in chat._fallback_text()
    assert "researcher (Done)" in chat._fallback_html()
    chat.lang = "zh-CN"
    assert f"↳ [researcher（完成）：{TASK}]" in chat._fallback_text()


def test_a_delegate_call_is_a_sub_agent_card_before_its_child_starts() -> None:
    message = Message.assistant([ToolCallPart(id="d1", name="delegate",
                                              args={"agent": "coder", "task": "Fix it"})])
    message.metadata.tool_executions.append(ToolExecution(
        id="d1", name="delegate", label="Delegate", args={"agent": "coder", "task": "Fix"}))
    other = Message.assistant([ToolCallPart(id="t1", name="delegate", args={"x": 1})])
    other.metadata.tool_executions.append(ToolExecution(id="t1", name="delegate", label="D"))
    card = render_message(message, 1)["cards"][0]
    assert card["kind"] == "subagent" and card["subagent"]["agent"] == "coder"
    assert card["subagent"]["status"] == "running" and card["subagent"]["messages"] == []
    assert "subagent" not in render_message(other, 1)["cards"][0]  # no agent: a tool card


async def test_resume_rebuilds_the_nested_card_from_the_stored_child(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    child_provider = FakeProvider([calls(("p1", "plus", {"a": 2, "b": 3})),
                                   answer("The sum is 5.", thinking="add them")])
    child = AgentSession(Agent("researcher", model=child_provider), ToolCatalog([plus]), store,
                         provider=child_provider)
    await child.run(TASK)
    child.flush()
    parent_provider = FakeProvider([])
    parent = AgentSession(Agent("planner", model=parent_provider), store=store,
                          provider=parent_provider)
    parent.flush()
    store.append_message(parent.id, Message.user("Plan it"))
    call = Message.assistant([TextPart(text="Delegating."), ToolCallPart(
        id="d1", name="delegate", args={"agent": "researcher", "task": TASK})])
    call.metadata.tool_executions.append(ToolExecution(
        id="d1", name="delegate", label="Delegate", args={"agent": "researcher", "task": TASK},
        status="done", result="The sum is 5.",
        subagent=SubagentRun(session_id=child.id, agent="researcher", task=TASK,
                             status="interrupted", input_tokens=220, output_tokens=50,
                             api_calls=2)))
    store.append_message(parent.id, call)
    store.append_message(parent.id, Message.tool_result("d1", "delegate", "The sum is 5."))
    resumed = AgentSession.resume(parent.id, store=store, provider=parent_provider)
    chat = ChatView(resumed)
    card = card_of(chat.messages, "d1")
    assert card["kind"] == "subagent"
    part = card["subagent"]
    assert (part["agent"], part["task"], part["status"]) == ("researcher", TASK, "interrupted")
    assert part["tokens"] == {"input_tokens": 220, "output_tokens": 50, "api_calls": 2}
    # The child's own messages, drawn by the same render_message as the top level: its
    # tool call and its answer (its prompt is the task, shown in the header instead).
    assert [m["role"] for m in part["messages"]] == ["assistant", "assistant"]
    assert [(c["kind"], c["name"], c["status"]) for c in part["messages"][0]["cards"]] == [
        ("tool", "plus", "done")]
    assert part["messages"][1]["text"] == "The sum is 5."
    assert part["messages"][1]["thinking"] == "add them"
    # A cut text of the stored child comes whole by path.
    whole = chat._full_text({"message_id": part["messages"][1]["id"], "field": "text",
                             "path": ["d1"]})
    assert whole["text"] == "The sum is 5."
    # The snapshot a reloaded page asks for has it too.
    assert card_of(chat._sync({})["messages"], "d1")["subagent"]["messages"] == part["messages"]


# --- SubagentCard on its own --------------------------------------------------------


def test_subagent_card_refuses_unknown_arguments() -> None:
    with pytest.raises(TypeError, match="did you mean 'agent'"):
        SubagentCard(agnt="researcher")


async def test_subagent_card_follows_its_run_and_stops_it(sent: SentMessages) -> None:
    stopped: list[bool] = []
    start = SubagentStartEvent(id="d1", agent="researcher", task=TASK)
    card = SubagentCard.from_event(start, stop=lambda: stopped.append(True),
                                   flush_interval=60)
    assert card.part["status"] == "running" and card.can_stop is True
    steps = research_steps()
    events: list[Any] = []
    history = ChildHistory(events.append, TASK)  # the child's complete stream
    for step in steps[:8]:
        history.play(step)
    for event in events:
        card.apply(SubagentEvent(id="d1", event=event))
        card.apply(SubagentEvent(id="other", event=event))  # another run: ignored
    snapshot = card._sync({})
    assert snapshot["part"]["activity"] is None and snapshot["part"]["plan"] == {
        "done": 1, "total": 2}
    assert [c["name"] for c in transcript(snapshot["part"])[0]["cards"]] == ["web_search"]
    assert card.part["messages"] is None  # mid-run: the transcript travels in batches
    card._stop_request({})
    assert stopped == [True]
    events.clear()
    for step in steps[8:]:
        history.play(step)
    history.ended("done")
    for event in events:
        card.apply(SubagentEvent(id="d1", event=event))
    card.apply(SubagentEndEvent(id="d1", agent="researcher", status="done", result="ok"))
    assert card.part["status"] == "done" and card.status == "done"
    assert transcript(card.part)[-1]["text"] == "Found **three** sources."
    assert {tuple(op["path"]) for op in ops_of(sent) if "path" in op} == {("d1",)}
    with pytest.raises(RequestError, match="not running"):
        card._stop_request({})
    assert repr(card) == "SubagentCard(researcher: done)"
    assert "researcher (Done): Find sources" in card._fallback_text()
    assert "Found **three** sources." in card._fallback_html()  # as text, never markup
    assert "<strong>" not in card._fallback_html()


async def test_two_children_asking_under_one_id_keep_their_own_approval_cards(
        sent: SentMessages) -> None:
    """Two children's calls share an id (a server that sends none: ``call_0`` each). The
    page answers one card with its path: that card goes, the other stays, and the answer
    runs only the child it names (a real crew, not the stand-in)."""
    from ..support import sessions as support
    from ..support.sessions import guarded_op

    support.ran.clear()
    children = [Agent(name, model=FakeProvider([calls(("call_0", "guarded_op", {"x": x})),
                                                answer(name)]),
                      tools=AgentToolConfig(enabled=["guarded_op"]))
                for name, x in (("researcher", 1), ("coder", 2))]
    planner = FakeProvider([calls(("d1", "delegate", {"agent": "researcher", "task": "a"}),
                                  ("d2", "delegate", {"agent": "coder", "task": "b"})),
                            answer("ok")])
    catalog = ToolCatalog.default()
    catalog.register(guarded_op)
    session = AgentSession(Agent("planner", model=planner, subagents=children), catalog)
    chat = ChatView(session)
    task = session.start("go")
    await wait_until(lambda: len(chat.approvals) == 2)
    assert [(a["id"], a["agent"], a["path"]) for a in chat.approvals] == [
        ("call_0", "researcher", ["d1"]), ("call_0", "coder", ["d2"])]
    chat._command({"command": {"type": "approve", "id": "call_0", "decision": "allow_once",
                               "subagent": ["d2"]}})
    assert [a["agent"] for a in chat.approvals] == ["researcher"]
    chat._command({"command": {"type": "approve", "id": "call_0", "decision": "reject",
                               "subagent": ["d1"]}})
    assert chat.approvals == []
    await asyncio.wait_for(task, 10)
    assert support.ran == ["guarded_op 2"]


async def test_a_view_bound_mid_child_shows_the_childs_transcript_without_a_store(
        sent: SentMessages) -> None:
    """A chat view made while a child runs missed its start, so it draws the child from
    elsewhere. A session without a store has its child sessions in memory: the card must
    show the child's transcript from them, not stay an empty summary after the end."""
    held = asyncio.Event()
    reached = asyncio.Event()

    async def hold() -> None:
        reached.set()
        await held.wait()

    researcher = Agent("researcher", model=FakeProvider(
        [calls(("p1", "plus", {"a": 1, "b": 2})), [hold, *answer("It is 3.")]]),
        tools=AgentToolConfig(enabled=["plus"]))
    planner = FakeProvider([calls(("d1", "delegate", {"agent": "researcher", "task": "add"})),
                            answer("ok")])
    catalog = ToolCatalog.default()
    catalog.register(plus)
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher]), catalog)
    task = session.start("go")
    await asyncio.wait_for(reached.wait(), 10)
    chat = ChatView(session)  # bound mid-child
    part = card_of(chat._sync({})["messages"], "d1")["subagent"]
    assert part["status"] == "running"
    assert [c["name"] for c in part["messages"][0]["cards"]] == ["plus"]  # so far
    held.set()
    await asyncio.wait_for(task, 10)
    part = card_of(chat.messages, "d1")["subagent"]
    assert part["status"] == "done" and part["messages"][-1]["text"] == "It is 3."


async def test_a_huge_task_is_bounded_in_the_card_at_every_stage(sent: SentMessages) -> None:
    """The parent's model writes a 1 MB task: the card carries it in every update of the
    parent's message — before the child starts, while it runs, from the store after —
    so its state holds the beginning only (the call's arguments are bounded the same
    way)."""
    from neta_nb.widgets.state_bounds import TASK_CHARS

    task = "t" * 1_000_000
    store = SessionStore(":memory:")
    planner = FakeProvider([calls(("d1", "delegate", {"agent": "w", "task": task})),
                            answer("ok")])
    worker = Agent("w", model=FakeProvider([answer("done")]))
    session = AgentSession(Agent("planner", model=planner, subagents=[worker]),
                           ToolCatalog.default(), store)
    chat = ChatView(session)
    await session.run("go")
    execution = session.messages[1].metadata.tool_executions[0]
    stored = chat._live.subagents  # a card drawn from no followed run: as stored
    parts = [chat._live.part_whole(execution), stored.part(ConversationProjection(), execution)]
    execution.subagent = None
    # from the call's arguments alone:
    parts.append(stored.part(ConversationProjection(), execution))
    for part in parts:
        assert part is not None and len(part["task"]) <= TASK_CHARS + 1
        assert part["task"].startswith("ttt")
    batches = [op for op in ops_of(sent) if op["op"] == "item"]
    assert batches and max(len(str(op)) for op in batches) < 100_000


async def test_a_call_id_used_again_in_a_later_turn_keeps_each_card_its_own_child(
        sent: SentMessages) -> None:
    """A server that sends no call ids names every turn's first call ``call_0``: the
    second turn's child must not take over the first turn's card."""
    planner = FakeProvider([
        calls(("call_0", "delegate", {"agent": "w", "task": "first"})), answer("one"),
        calls(("call_0", "delegate", {"agent": "w", "task": "second"})), answer("two")])
    worker = Agent("w", model=FakeProvider([answer("first answer"), answer("second answer")]))
    session = AgentSession(Agent("planner", model=planner, subagents=[worker]),
                           ToolCatalog.default())
    chat = ChatView(session)
    await session.run("go")
    await session.run("again")
    cards = [card["subagent"] for item in chat._sync({})["messages"]
             for card in item.get("cards") or [] if card.get("subagent")]
    assert [(c["task"], transcript(c)[-1]["text"]) for c in cards] == [
        ("first", "first answer"), ("second", "second answer")]
