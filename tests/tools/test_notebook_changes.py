"""One review for a response's changes (``neta_nb.tools.notebook.changes``): the change
calls one response writes in a row are asked about at once (one request each, carrying
the set), made together in one page request when accepted, and each call tells the model
its own outcome; the record of accepted changes is read back from the stored history."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from neta_nb import AgentToolConfig, SessionStore
from neta_nb.messages import ToolCallPart
from neta_nb.runtime.session.session import AgentSession
from neta_nb.tools.notebook import applied_changes
from neta_nb.tools.notebook.changes import reviewed_together
from neta_nb.tools.rich import CELL_EDIT_TYPE
from neta_nb.widgets import ChatView

from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import answer, calls, make_session
from ..support.timing import wait_until

TOOLS = AgentToolConfig(enabled=["read_notebook", "edit_cell", "insert_cell", "delete_cell",
                                 "move_cell", "run_cell"])
CELLS: list[dict[str, Any]] = [
    {"id": "a", "source": "x = 1"},
    {"id": "b", "source": "y = 2"},
    {"id": "c", "source": "z = 3"},
    {"id": "d", "source": "print(x, y, z)"},
    {"id": "e", "cell_type": "markdown", "source": "# Old notes"},
]
TURN = [("e1", "edit_cell", {"cell_id": "a", "source": "x = 10"}),
        ("e2", "edit_cell", {"cell_id": "b", "source": "y = 20"}),
        ("e3", "edit_cell", {"cell_id": "c", "source": "z = 30"}),
        ("i1", "insert_cell", {"source": "print('sum', x + y + z)", "after_cell_id": "d"}),
        ("d1", "delete_cell", {"cell_id": "e"})]
IDS = [call_id for call_id, _, _ in TURN]


def _session(page: FakeNotebookPage, responses: list[list[Any]] | None = None,
             **agent: Any) -> tuple[Any, Any, Any]:
    session, rec, provider = make_session(
        responses or [calls(*TURN), answer("Done.")], agent_options={"tools": TOOLS, **agent})
    session.notebook_page = page
    return session, rec, provider


def _results(session: Any) -> dict[str, Any]:
    return {r.tool_call_id: r for m in session.messages for r in m.tool_results}


def _card(session: Any, call_id: str) -> dict[str, Any]:
    execution = next(e for m in session.messages for e in m.metadata.tool_executions
                     if e.id == call_id)
    item = next(i for i in execution.outputs if i.media_type == CELL_EDIT_TYPE)
    return dict(json.loads(item.text))


async def _asked(rec: Any, count: int) -> None:
    """Wait (at most 10 s) until ``count`` approval requests have been made."""
    await wait_until(lambda: len(rec.of("approval_request")) >= count)


async def _review(session: Any, rec: Any, decide: dict[str, str]) -> list[Any]:
    """Run the turn, answering each change of the set as ``decide`` says; the requests."""
    session.attach_approver()
    task = session.start("Tidy the notebook")
    await _asked(rec, len(decide))
    requests = rec.of("approval_request")
    for call_id, decision in decide.items():
        assert session.approve(call_id, decision)
    await task
    return list(requests)


def test_the_set_is_the_run_of_change_calls_among_the_notebook_calls() -> None:
    parts = [ToolCallPart(id=i, name=n, args={}) for i, n in [
        ("r", "read_notebook"), ("e1", "edit_cell"), ("t", "todo"), ("i1", "insert_cell"),
        ("run", "run_cell"), ("d1", "delete_cell"), ("m1", "move_cell")]]
    assert [c.id for c in reviewed_together(parts, "i1")] == ["e1", "i1"]  # todo: no split
    assert [c.id for c in reviewed_together(parts, "d1")] == ["d1", "m1"]  # run_cell splits
    assert reviewed_together(parts, "r") == [] and reviewed_together(parts, "x") == []


async def test_every_change_is_asked_at_once_and_accept_all_makes_them_as_one_step() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, provider = _session(page)
    requests = await _review(session, rec, dict.fromkeys(IDS, "allow_once"))
    # Asked together: every request out before any answer, each carrying the set.
    assert [r.id for r in requests] == IDS
    groups = [r.proposal["group"] for r in requests]
    assert groups == [{"id": "e1", "index": n, "size": 5} for n in range(5)]
    assert [r.proposal["kind"] for r in requests] == ["edit"] * 3 + ["insert", "delete"]
    assert requests[3].proposal["after_cell_id"] == "d"
    assert "-# Old notes" in requests[4].proposal["diff"]
    # Made in one request, after every answer: the notebook exactly as proposed.
    assert [op for op, _ in page.requests] == ["read", "read", "apply_changes"]
    assert [(c["id"], c["source"]) for c in page.cells] == [
        ("a", "x = 10"), ("b", "y = 20"), ("c", "z = 30"), ("d", "print(x, y, z)"),
        ("new-1", "print('sum', x + y + z)")]
    # Each call tells the model its own outcome.
    results = _results(session)
    assert [results[i].is_error for i in IDS] == [False] * 5
    assert results["e2"].content.startswith(
        "The user accepted the edit of cell b; cell b now holds the proposed text.")
    assert "added after cell d with the id new-1" in results["i1"].content
    assert "cell e was deleted" in results["d1"].content
    assert "one of 5 changes proposed together" in results["d1"].content
    assert "Undo Cell Operation" in results["e1"].content
    sent = str([m.model_dump() for m in provider.requests[-1].messages])
    assert "cell a now holds the proposed text" in sent and "with the id new-1" in sent
    # The first card carries the set's summary (the Changes card of the history).
    summary = _card(session, "e1")["group"]["changes"]
    assert [(s["kind"], s["cell_id"], s["decision"]) for s in summary] == [
        ("edit", "a", "accepted"), ("edit", "b", "accepted"), ("edit", "c", "accepted"),
        ("insert", "new-1", "accepted"), ("delete", "e", "accepted")]
    assert (summary[0]["added"], summary[0]["removed"]) == (1, 1)
    assert _card(session, "i1")["cell_id"] == "new-1"


async def test_reject_all_asks_nothing_of_the_notebook_and_tells_each_call() -> None:
    page = FakeNotebookPage(CELLS)
    before = json.dumps(page.cells)
    session, rec, _ = _session(page)
    await _review(session, rec, dict.fromkeys(IDS, "reject"))
    assert json.dumps(page.cells) == before and not page.dirty
    assert [op for op, _ in page.requests] == ["read"]
    results = _results(session)
    assert all(results[i].is_error for i in IDS)
    assert results["e1"].content.startswith("The user rejected the edit of cell a")
    assert results["d1"].content.startswith("The user rejected the deletion of cell e")
    assert [s["decision"] for s in _card(session, "e1")["group"]["changes"]] == [
        "rejected"] * 5
    assert applied_changes(session.messages) == []


async def test_decisions_per_change_and_the_text_the_user_changed() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(page)
    session.attach_approver()
    task = session.start("Tidy")
    await _asked(rec, 5)
    assert session.approve("e1", "allow_once", text="x = 100")
    for call_id in ("e2", "i1"):
        assert session.approve(call_id, "reject")
    for call_id in ("e3", "d1"):
        assert session.approve(call_id, "allow_once")
    await task
    assert [(c["id"], c["source"]) for c in page.cells] == [
        ("a", "x = 100"), ("b", "y = 2"), ("c", "z = 30"), ("d", "print(x, y, z)")]
    results = _results(session)
    assert "They changed it before accepting; it holds:\nx = 100" in results["e1"].content
    assert results["e2"].is_error and results["i1"].is_error
    assert "the 3 made were one step" in results["e3"].content
    card = _card(session, "e1")
    assert card["after"] == "x = 100" and card["changed_by_user"] is True
    made = applied_changes(session.messages)
    assert [(c.call_id, c.kind, c.cell_id, c.before, c.after, c.group) for c in made] == [
        ("e1", "edit", "a", "x = 1", "x = 100", "e1"),
        ("e3", "edit", "c", "z = 3", "z = 30", "e1"),
        ("d1", "delete", "e", "# Old notes", "", "e1")]


async def test_a_change_that_built_on_a_rejected_one_is_not_made_and_says_why() -> None:
    page = FakeNotebookPage(CELLS)
    turn: list[tuple[str, str, dict[str, Any]]] = [
            ("e1", "edit_cell", {"cell_id": "a", "source": "x = 10"}),
            ("e2", "edit_cell", {"cell_id": "a", "source": "x = 10\nx += 1"}),
            ("m1", "move_cell", {"cell_id": "d", "to_index": 1})]
    session, rec, _ = _session(page, [calls(*turn), answer("ok")])
    requests = await _review(session, rec, {"e1": "reject", "e2": "allow_once",
                                            "m1": "allow_once"})
    # The second edit was shown against the first one's text.
    assert requests[1].proposal["before"] == "x = 10"
    assert [c["id"] for c in page.cells] == ["d", "a", "b", "c", "e"]
    assert page.cells[1]["source"] == "x = 1"
    results = _results(session)
    assert results["e2"].is_error
    assert "accepted the edit of cell a, but it was not made" in results["e2"].content
    assert "an earlier change of it was rejected" in results["e2"].content
    assert not results["m1"].is_error
    assert [s["decision"] for s in _card(session, "e1")["group"]["changes"]] == [
        "rejected", "failed", "accepted"]


async def test_a_refused_call_is_left_out_and_the_rest_are_reviewed_together() -> None:
    page = FakeNotebookPage(CELLS)
    turn = [("e1", "edit_cell", {"cell_id": "nope", "source": "1"}),
            ("e2", "edit_cell", {"cell_id": "b", "source": "y = 2"}),  # no change
            ("d1", "delete_cell", {"cell_id": "c"}),
            ("d2", "delete_cell", {"cell_id": "d"})]
    session, rec, _ = _session(page, [calls(*turn), answer("ok")])
    requests = await _review(session, rec, {"d1": "allow_once", "d2": "allow_once"})
    assert [r.id for r in requests] == ["d1", "d2"]
    assert requests[0].proposal["group"] == {"id": "d1", "index": 0, "size": 2}
    results = _results(session)
    assert results["e1"].is_error and "No cell has the id 'nope'" in results["e1"].content
    assert "already holds this text" in results["e2"].content
    assert [c["id"] for c in page.cells] == ["a", "b", "e"]


async def test_one_change_alone_and_changes_split_by_a_run_are_asked_one_by_one() -> None:
    page = FakeNotebookPage(CELLS)
    turn = [("e1", "edit_cell", {"cell_id": "a", "source": "x = 10"}),
            ("r", "run_cell", {"cell_id": "a"}),
            ("e2", "edit_cell", {"cell_id": "b", "source": "y = 20"})]
    session, rec, _ = _session(page, [calls(*turn), answer("ok")])
    session.attach_approver()
    task = session.start("go")
    for call_id in ("e1", "r", "e2"):
        await _asked(rec, ["e1", "r", "e2"].index(call_id) + 1)
        request = rec.of("approval_request")[-1]
        assert request.id == call_id
        assert request.proposal is None or "group" not in request.proposal
        assert session.approve(call_id, "allow_once")
    await task
    assert "apply_changes" not in [op for op, _ in page.requests]
    assert [c["source"] for c in page.cells[:2]] == ["x = 10", "y = 20"]


async def test_an_agent_that_accepts_its_edits_and_no_one_there_decide_the_set() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(page, accept_notebook_edits=True)
    await session.run("go")
    assert rec.of("approval_request") == []
    assert [c["source"] for c in page.cells[:3]] == ["x = 10", "y = 20", "z = 30"]
    assert "It was accepted without asking" in _results(session)["e1"].content

    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(page)  # no view attached: the policy (reject) decides
    await session.run("go")
    assert [op for op, _ in page.requests] == ["read"]
    assert "No one was there to decide" in _results(session)["e1"].content


async def test_the_record_and_the_set_survive_a_resume(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.db")
    page = FakeNotebookPage(CELLS)
    session, rec, _ = make_session([calls(*TURN), answer("Done.")],
                                   agent_options={"tools": TOOLS}, store=store)
    session.notebook_page = page
    decide = dict.fromkeys(IDS, "allow_once") | {"e2": "reject"}
    await _review(session, rec, decide)
    session.flush()
    resumed = AgentSession.resume(session.id, store=store)
    made = applied_changes(resumed.messages)
    assert [c.call_id for c in made] == ["e1", "e3", "i1", "d1"]
    assert made[2].cell_id == "new-1" and made[2].after == "print('sum', x + y + z)"
    assert [s["decision"] for s in _card(resumed, "e1")["group"]["changes"]] == [
        "accepted", "rejected", "accepted", "accepted", "accepted"]


async def test_the_saved_chat_shows_the_set_and_what_became_of_each_change() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(page)
    await _review(session, rec, dict.fromkeys(IDS, "allow_once") | {"e2": "reject"})
    form = ChatView(session)._fallback_html()
    assert form.count('data-neta-changes="5"') == 1  # once: on the first change's card
    assert "<b>Changes</b> 1 added · 3 changed · 1 deleted" in form
    assert "<li>changed a +1 −1 · Accepted</li>" in form
    assert "<li>changed b +1 −1 · Rejected</li>" in form
    assert "<li>added new-1 +1 · Accepted</li>" in form
    assert "<li>deleted 5 −1 · Accepted</li>" in form  # by its place, as the notebook shows it
    assert "Edit of cell b · Rejected" in form and "-y = 2" in form


async def test_the_sets_of_one_turn_name_that_turn_so_the_page_can_join_their_steps() -> None:
    page = FakeNotebookPage(CELLS)
    first = [("e1", "edit_cell", {"cell_id": "a", "source": "x = 10"}),
             ("e2", "edit_cell", {"cell_id": "b", "source": "y = 20"})]
    second = [("d1", "delete_cell", {"cell_id": "c"}), ("d2", "delete_cell", {"cell_id": "d"})]
    session, _, _ = _session(page, [calls(*first), calls(*second), answer("ok"),
                                    calls(("e3", "edit_cell", {"cell_id": "a", "source": "1"}),
                                          ("e4", "edit_cell", {"cell_id": "b", "source": "2"})),
                                    answer("ok")], accept_notebook_edits=True)
    await session.run("Tidy")
    await session.run("Again")
    turns = [args["turn"] for op, args in page.requests if op == "apply_changes"]
    users = [m.id for m in session.messages if m.role == "user"]
    assert turns == [users[0], users[0], users[1]]


async def test_a_move_counted_after_a_rejected_change_is_not_made_elsewhere() -> None:
    # The move's positions count the deletion before it; with that deletion rejected,
    # "b to position 2" would leave b where it is, told as moved, and recorded as a move
    # that a rewind would then undo by moving b before a.
    page = FakeNotebookPage(CELLS)
    turn: list[tuple[str, str, dict[str, Any]]] = [
        ("d1", "delete_cell", {"cell_id": "a"}),
        ("m1", "move_cell", {"cell_id": "b", "to_index": 2})]
    session, rec, _ = _session(page, [calls(*turn), answer("ok")])
    await _review(session, rec, {"d1": "reject", "m1": "allow_once"})
    assert [c["id"] for c in page.cells] == ["a", "b", "c", "d", "e"]
    result = _results(session)["m1"]
    assert result.is_error
    assert "not at the position it was proposed from" in result.content
    assert applied_changes(session.messages) == []


async def test_a_page_that_fails_mid_set_fails_every_call_and_none_is_asked_again() -> None:
    class FailingPage(FakeNotebookPage):
        async def request(self, op: str, args: dict[str, Any], *,
                          wait: float | None = None) -> dict[str, Any]:
            if op == "apply_changes":
                raise ConnectionError("the comm closed")
            return await super().request(op, args, wait=wait)

    page = FailingPage(CELLS)
    session, rec, _ = _session(page)
    session.attach_approver()
    task = session.start("Tidy the notebook")
    await _asked(rec, len(IDS))
    for call_id in IDS:
        assert session.approve(call_id, "allow_once")
    await asyncio.wait_for(task, 10)  # no call of the set is asked again alone
    assert [r.id for r in rec.of("approval_request")] == IDS
    results = _results(session)
    for call_id in IDS:
        assert results[call_id].is_error
        assert "could not be made: the page failed (ConnectionError: the comm closed)" in (
            results[call_id].content)
    assert page.cells == FakeNotebookPage(CELLS).cells
