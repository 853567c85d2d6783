"""What a saved notebook shows of a session beside its conversation: the chat's static
form names the session (its title, the session a branch was forked from, what it cost)
and the session list's static form draws its rows as the live list does (titles, plan
badges, branches, costs) — after a resume too."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, ModelPrice, ScriptedProvider, SessionStore
from neta_nb.messages import Usage
from neta_nb.store.records import SessionRecord
from neta_nb.widgets import ChatView, SessionSidebar

from ..support.sessions import answer, make_session


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions.sqlite3")


PRICE = ModelPrice(input=3.0, output=15.0)
"""USD per million tokens: 1,000 in and 100 out cost $0.0045."""


def priced_session(store: SessionStore, *answers: str) -> AgentSession:
    session, _, provider = make_session(
        [answer(text, usage=Usage(input_tokens=1000, output_tokens=100)) for text in answers],
        store=store)
    provider.price = PRICE
    return session


async def parent_and_branch(store: SessionStore) -> tuple[AgentSession, AgentSession]:
    """A priced session of one turn ("What stands out?") and a branch forked at its
    answer, both stored."""
    parent = priced_session(store, "Two rows lack a rating.")
    await parent.run("What stands out?")
    parent.flush()
    branch = parent.fork(parent.messages[-1].id)
    branch.flush()
    return parent, branch


def heading_of(view: ChatView) -> str:
    rich, _ = view._static_parts()
    start = rich.index('class="neta-static-heading"')
    return rich[start:rich.index("</div>", start)]


async def test_the_saved_chat_names_its_session_and_its_cost(store: SessionStore) -> None:
    session = priced_session(store, "Two rows lack a rating.", "Fixed.")
    view = ChatView(session)
    await session.run("What stands out in the sales data?")
    await session.run("Fill them in")
    session.flush()
    heading = heading_of(view)
    assert "<b>What stands out in the sales data?</b>" in heading
    assert "This session: $0.0090" in heading  # 2 × (1,000 × $3 + 100 × $15) / 1e6
    view.close()


async def test_an_unpriced_model_shows_a_dash_never_zero(store: SessionStore) -> None:
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": "Hi."}]])),
                           store=store)
    session.provider.price = None
    assert session.provider.price is None, "the offline model has no price of its own"
    view = ChatView(session)
    await session.run("Hello")
    session.flush()
    heading = heading_of(view)
    assert "This session: —" in heading and "$0.00" not in heading
    view.close()


async def test_a_branch_names_the_session_it_was_forked_from(store: SessionStore) -> None:
    parent = priced_session(store, "Two rows lack a rating.")
    await parent.run("What stands out?")
    parent.flush()
    store.rename_session(parent.id, "Ratings <audit>")
    branch = parent.fork(parent.messages[-1].id)
    view = ChatView(branch)
    heading = heading_of(view)
    assert "<b>What stands out?</b>" in heading  # the branch's own automatic title
    assert "A branch of “Ratings &lt;audit&gt;”" in heading  # escaped
    assert "This session: $0.0045" in heading  # what its history cost, carried over
    view.close()


async def test_a_rename_in_the_list_reaches_the_saved_chat(store: SessionStore) -> None:
    session = priced_session(store, "Hi.")
    view = ChatView(session)
    sidebar = SessionSidebar(store, chat=view)
    await session.run("Hello")
    session.flush()
    sidebar._rename({"session_id": session.id, "title": "Greeting"})
    assert "<b>Greeting</b>" in heading_of(view)
    sidebar.close()
    view.close()


async def test_titles_branches_and_costs_survive_a_resume(store: SessionStore) -> None:
    first = priced_session(store, "Two rows lack a rating.", "Done.")
    await first.run("What stands out?")
    first.flush()
    branch = first.fork(first.messages[-1].id)
    branch.flush()
    store.rename_session(first.id, "Audit")
    resumed = AgentSession.resume(branch.id, store=store)
    resumed.provider.price = PRICE
    view = ChatView(resumed)
    heading = heading_of(view)
    assert "A branch of “Audit”" in heading and "$0.0045" in heading
    view.close()


async def test_the_saved_list_draws_titles_badges_branches_and_costs(
        store: SessionStore) -> None:
    parent, branch = await parent_and_branch(store)
    empty = AgentSession(Agent("a", model=ScriptedProvider()), store=store)
    empty.flush()
    sidebar = SessionSidebar(store, lang="zh-CN")
    rows = {row["id"]: row for row in sidebar.sessions}
    assert rows[empty.id]["untitled"] is True and rows[parent.id]["untitled"] is False
    rich, plain = sidebar._static_parts()
    assert "新建对话" in rich and "New chat" not in rich  # the untitled one, in the list's language
    assert "“What stands out?”的分支" in rich
    assert rich.count("$0.0045") == 2  # the parent's and the branch's (its history's)
    lines = plain.splitlines()
    # What it branched from, and when (the fork's time, as the live row shows it).
    made = datetime.fromtimestamp(rows[branch.id]["created_at"])
    assert any(line.startswith(f"What stands out? (“What stands out?”的分支，创建于 "
                               f"{made:%H:%M}) $0.0045") for line in lines), lines
    sidebar.close()


async def test_renaming_the_parent_in_the_list_reaches_the_branchs_saved_chat(
        store: SessionStore) -> None:
    parent, branch = await parent_and_branch(store)
    view = ChatView(branch)
    sidebar = SessionSidebar(store, chat=view)
    assert "A branch of “What stands out?”" in heading_of(view)
    sidebar._rename({"session_id": parent.id, "title": "Ratings"})
    assert "A branch of “Ratings”" in heading_of(view)
    sidebar._rename({"session_id": branch.id, "title": "Try two"})
    assert "<b>Try two</b>" in heading_of(view)
    sidebar._rename({"session_id": branch.id, "title": ""})  # back to the automatic one
    assert "<b>What stands out?</b>" in heading_of(view)
    sidebar.close()
    view.close()


async def test_drawing_the_saved_chat_reads_the_store_once_per_session_shown(
        store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Drawn at every turn's end on the kernel's loop: a store whose server is down must
    # not stall it each time (its names are read when the session is first drawn).
    session = priced_session(store, "One.", "Two.", "Three.")
    view = ChatView(session)
    await session.run("First")
    session.flush()
    reads: list[str] = []
    real = store.get_session

    def counted(session_id: str) -> SessionRecord | None:
        reads.append(session_id)
        return real(session_id)

    monkeypatch.setattr(store, "get_session", counted)
    view._names = None  # as when the session is first shown
    heading_of(view)
    await session.run("Second")
    await session.run("Third")
    heading_of(view)
    assert reads == [session.id]

    def down(session_id: str) -> SessionRecord | None:
        raise OSError("connection refused")

    monkeypatch.setattr(store, "get_session", down)
    view._names = None
    assert "<b>First</b>" in heading_of(view)  # the names it knows without the store
    view.close()
