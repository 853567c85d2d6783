"""TodoCard: follows a TodoStore live, normalizes lists, repr and static fallbacks."""

from __future__ import annotations

import pytest

from neta_nb.events import TodoUpdateEvent
from neta_nb.todo import TodoStore
from neta_nb.widgets import TodoCard

PLAN = [
    {"id": "1", "content": "Read the data", "status": "completed"},
    {"id": "2", "content": "Write tests", "status": "in_progress"},
    {"id": "3", "content": "Ship <b>it</b>", "status": "pending"},
    {"id": "4", "content": "Email", "status": "cancelled"},
]


def test_follows_the_store_live() -> None:
    store = TodoStore()
    card = TodoCard(store)
    assert card.todos == []
    store.write(PLAN)
    assert card.todos == PLAN
    store.write([{"id": "2", "status": "completed"}], merge=True)
    assert card.todos[1] == {"id": "2", "content": "Write tests", "status": "completed"}
    assert repr(card) == "TodoCard(2/4 done)"


def test_close_and_unfollow_stop_following() -> None:
    store = TodoStore()
    card = TodoCard(store)
    card.unfollow()
    store.write(PLAN)
    assert card.todos == []
    other = TodoCard(store)
    other.close()
    store.write(PLAN[:1])
    assert other.todos == PLAN


def test_follow_switches_stores() -> None:
    first, second = TodoStore(), TodoStore()
    card = TodoCard(first)
    card.follow(second)
    first.write(PLAN)
    assert card.todos == []
    second.write(PLAN[:2])
    assert card.todos == PLAN[:2]


def test_a_list_is_normalized_like_the_store_does() -> None:
    card = TodoCard(todos=[{"content": "No id", "status": "weird"}])
    assert card.todos == [{"id": "?", "content": "No id", "status": "pending"}]


def test_store_and_todos_together_are_refused() -> None:
    with pytest.raises(TypeError, match="either"):
        TodoCard(TodoStore(), todos=[])


def test_apply_todo_update_event() -> None:
    card = TodoCard()
    card.apply(TodoUpdateEvent(todos=PLAN, summary={"total": 4}))
    assert card.summary.in_progress == 1
    assert card.summary.completed == 1


def test_repr_is_stable() -> None:
    assert repr(TodoCard()) == "TodoCard(0/0 done)"
    assert repr(TodoCard(todos=PLAN)) == "TodoCard(1/4 done)"


def test_text_fallback() -> None:
    card = TodoCard(todos=PLAN)
    assert card._fallback_text() == (
        "Plan · 1/4 done\n"
        "[x] Read the data\n"
        "[>] Write tests (In progress)\n"
        "[ ] Ship <b>it</b>\n"
        "[-] Email (Cancelled)"
    )
    card.lang = "zh-CN"
    assert card._fallback_text().splitlines()[:3] == [
        "任务规划 · 1/4 完成", "[x] Read the data", "[>] Write tests (进行中)"]


def test_the_static_form_escapes_content() -> None:
    card = TodoCard(todos=PLAN)
    html = card._static_form.bundle()["text/html"]
    assert "Ship &lt;b&gt;it&lt;/b&gt;" in html
    assert "<b>it" not in html
    assert "Plan · 1/4 done" in html


async def test_a_sessions_card_stops_spinning_when_the_turn_ends() -> None:
    # The step in progress spins while the turn runs and shows as paused once it ends
    # (here with the step still in progress: the model stopped before finishing it).
    from neta_nb import Agent, AgentSession, ToolCatalog

    from ..support.sessions import FakeProvider, answer, calls

    plan = {"todos": [{"id": "1", "content": "Look", "status": "in_progress"}]}
    seen: list[bool] = []
    provider = FakeProvider([calls(("c1", "todo", plan)),
                             [lambda: seen.append(card.paused), *answer("Stopped early.")]])
    session = AgentSession(Agent("planner", model=provider), ToolCatalog.default())
    card = TodoCard(session)
    assert card.paused is False  # an empty plan: no step in progress to show as paused
    await session.run("plan it")
    assert seen == [False]  # during the turn: spinning
    assert card.todos[0]["status"] == "in_progress" and card.paused is True


def test_a_store_no_session_drives_never_shows_paused() -> None:
    store = TodoStore()
    card = TodoCard(store)
    store.write(PLAN)
    assert card.working is None and card.paused is False
    card.working = False
    assert card.paused is True
    card.working = True
    assert card.paused is False


async def test_a_plan_without_a_step_in_progress_sends_no_change_of_paused() -> None:
    # Only a step in progress shows "paused": an empty or finished plan costs no message
    # when a turn starts and ends.
    from neta_nb import Agent, AgentSession

    from ..support.sessions import FakeProvider, answer

    session = AgentSession(Agent("planner", model=FakeProvider([answer("Hi."),
                                                                 answer("Done.")])))
    card = TodoCard(session)
    changes: list[bool] = []
    card.observe(lambda change: changes.append(change["new"]), names="paused")
    await session.run("hello")
    session.todo.write([{"id": "1", "content": "Load", "status": "completed"}])
    await session.run("again")
    assert changes == []
    assert card.working is False and card.paused is False


async def test_a_failing_subscriber_neither_sticks_the_turn_nor_hides_the_pause() -> None:
    # A subscriber of the session that raises (a user's callback, a widget whose comm is
    # gone) must not leave the session running, nor keep the card from hearing that the
    # turn ended.
    from neta_nb import Agent, AgentSession, ToolCatalog

    from ..support.sessions import FakeProvider, answer, calls

    plan = {"todos": [{"id": "1", "content": "Look", "status": "in_progress"}]}
    session = AgentSession(Agent("planner", model=FakeProvider(
        [calls(("c1", "todo", plan)), answer("Done.")])), ToolCatalog.default())

    def broken(_event: object) -> None:
        raise RuntimeError("subscriber bug")

    session.subscribe(broken)
    card = TodoCard(session)
    message = await session.run("go")
    assert message is not None and message.text == "Done."
    assert not session.running
    assert card.working is False and card.paused is True


def test_a_card_unfollowed_hears_no_more_turns() -> None:
    from neta_nb import Agent, AgentSession

    from ..support.sessions import FakeProvider

    session = AgentSession(Agent("planner", model=FakeProvider([])))
    card = TodoCard(session)
    card.unfollow()
    session.todo.write(PLAN)
    assert card.todos == []
