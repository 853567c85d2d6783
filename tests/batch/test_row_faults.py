"""What one row's data or the user's own code can do to a batch run, and what the options
and templates of ``agent.map`` refuse before anything runs: an output model's validator
that raises, a format width taken from a row, a lease of no time, a template that reaches
into a value's attributes — and a resume for every documented input form, in a SQLite and
a PostgreSQL store."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from neta_nb import Agent, SessionStore
from neta_nb.batch import BatchRun, executor
from neta_nb.batch.inputs import render_prompt
from neta_nb.store.batch_rows import BatchRows

from ..support.batch import RowModel, fail_storing_row, label_of

pd: Any = pytest.importorskip("pandas")  # untyped


def calls(model: RowModel) -> int:
    return sum(model.calls.values())


# --- one row's fault fails that row ---------------------------------------------------------

class Category(BaseModel):
    category: str

    @field_validator("category", mode="before")
    @classmethod
    def known(cls, value: Any) -> Any:
        return {"a": "hardware", "c": "billing"}[value]  # a KeyError for any other


def _category_answer(prompt: str) -> str:
    return f'{{"category": "{prompt.split()[-1]}"}}'


async def test_an_output_validator_that_raises_fails_its_row_and_gives_its_lease_back(
        store_target: str | Path) -> None:
    # A validator raising neither ValueError nor ValidationError (a KeyError here) is the
    # user's code failing for one row: that row fails with the traceback, the other rows
    # come back, and the row holds no lease — a resume finds it settled at once.
    store = SessionStore(store_target)
    agent = Agent("a", model=RowModel(answer=_category_answer))
    frame = await agent.map(["about a", "about b", "about c"], "Ticket {input}",
                            output=Category, store=store, run_id="r_validator",
                            concurrency=1)
    assert list(frame["status"]) == ["done", "failed", "done"]
    assert list(frame["category"][[0, 2]]) == ["hardware", "billing"]
    error = frame["error"][1]
    assert "KeyError: 'b'" in error and "Traceback" in error and "def known" not in error
    assert "in known" in error  # the frame of the validator that raised
    stored = BatchRows(store, "r_validator").all()
    assert [row.state for row in stored] == ["done", "failed", "done"]
    assert all(row.lease_owner is None for row in stored)
    assert stored[1].session_id is not None  # the answer that failed is kept to read
    began = time.monotonic()
    again = await asyncio.wait_for(BatchRun.resume(
        "r_validator", store=store, agent=agent, output=Category), 20)
    assert time.monotonic() - began < 10  # no lease waited out
    assert list(again["status"]) == ["done", "failed", "done"]
    store.close()


async def test_a_format_width_from_a_row_that_cannot_be_allocated_fails_that_row() -> None:
    # "{body:>{width}}" takes its width from the row: a row whose width cannot be
    # allocated (a MemoryError, or a width over the bound) fails, the others run.
    model = RowModel()
    rows = [{"body": "a", "width": 3}, {"body": "b", "width": 4_611_686_018_427_387_904},
            {"body": "c", "width": 20_000}, {"body": "d", "width": 2}]
    frame = await Agent("a", model=model).map(rows, "Ticket [{body:>{width}}]",
                                              concurrency=1)
    assert list(frame["status"]) == ["done", "failed", "failed", "done"]
    assert "at most 10,000" in frame["error"][1] and "at most 10,000" in frame["error"][2]
    assert frame["answer"][0] == label_of("Ticket [  a]")
    assert calls(model) == 2


async def test_any_exception_of_one_rows_rendering_fails_that_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever one row's rendering raises (here a RecursionError, as a deeply nested
    # value's repr would) fails that row with its traceback; the run goes on.

    def render(template: str | None, row: Any) -> str:
        if row.get("input") == "deep":
            raise RecursionError("maximum recursion depth exceeded")
        return render_prompt(template, row)

    monkeypatch.setattr(executor, "render_prompt", render)
    frame = await Agent("a", model=RowModel()).map(["a", "deep", "c"], concurrency=1)
    assert list(frame["status"]) == ["done", "failed", "done"]
    assert "RecursionError" in frame["error"][1] and "Traceback" in frame["error"][1]


async def test_a_row_whose_result_cannot_be_stored_is_given_back_when_the_run_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A store failure while storing one row's result ends the run (`await run` raises);
    # the row in hand goes back to the queue then, as the other workers' rows do — a
    # resume in this very process takes it at once instead of waiting out its lease.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel(delay=0.02))
    run = agent.map([f"t{i}" for i in range(6)], concurrency=2, store=store,
                    run_id="r_store_fails")
    fail_storing_row(run, 1, monkeypatch)
    with pytest.raises(sqlite3.OperationalError):
        await run
    row = BatchRows(store, "r_store_fails").all()[1]
    assert (row.state, row.lease_owner) == ("queued", None)
    frame = await asyncio.wait_for(BatchRun.resume("r_store_fails", store=store,
                                                   agent=agent), 20)
    assert list(frame["status"]) == ["done"] * 6
    # The session of the attempt whose result was lost is not left behind.
    assert {r.id for r in store.list_children("r_store_fails")} == set(frame["session_id"])


# --- options --------------------------------------------------------------------------------

@pytest.mark.parametrize("lease", [0, -5, 0.2, math.nan, math.inf, "60", True])
def test_a_lease_that_would_run_every_row_twice_is_refused(lease: Any,
                                                           tmp_path: Path) -> None:
    # lease_seconds=0 expires every lease as it is taken: each worker claims every row
    # again, and every row runs (and is paid for) more than once. Refused like the other
    # options, before anything is stored or run.
    model = RowModel()
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises((ValueError, TypeError), match="lease_seconds"):
        Agent("a", model=model).map(["x", "y"], store=store, run_id="r_lease",
                                    lease_seconds=lease)
    assert calls(model) == 0
    assert BatchRows(store, "r_lease").definition() is None


# --- templates ------------------------------------------------------------------------------

@pytest.mark.parametrize(("template", "reason"), [
    ("About {body.__class__.__mro__}", "no attribute or index access"),
    ("About {body[0]}", "no attribute or index access"),
    ("About {body.upper}", "no attribute or index access"),
    ("About {body:>999999999}", "at most 10,000"),
    ("About {body:.123456f}", "at most 10,000"),
    ("About {body:>{width}}", "names 'width'"),
    ("About {body:>{id:{id}}}", "one level"),
    ("About {body:{id}99999999}", "at most 10,000"),
    ("About {}", "empty"),
    ("About {body!z}", "conversion '!z'"),
    ("About {body:>{id!x}}", "conversion '!x'"),
], ids=["dunder", "index", "method", "width", "precision", "nested-missing",
        "nested-twice", "nested-literal", "empty", "conversion", "nested-conversion"])
def test_a_template_field_that_is_not_a_column_or_spec_without_bound_is_refused(
        template: str, reason: str) -> None:
    # Fields are columns' names only: "{body.__class__.__mro__}" would put Python's
    # internals into every prompt. Refused at map(), with the reason, before a row runs.
    model = RowModel()
    with pytest.raises(ValueError, match="prompt") as refused:
        Agent("a", model=model).map([{"body": "x", "id": 1}], template)
    assert reason in str(refused.value)
    assert calls(model) == 0


async def test_a_column_name_with_a_dot_and_conversions_fill_the_template() -> None:
    # "{a.b}" names the column "a.b" (a DataFrame's columns may hold dots); "!r" shows the
    # value's repr, and a width within the bound pads.
    df = pd.DataFrame({"user.name": ["ada", "lin"], "n": [1, 22]})
    frame = await Agent("a", model=RowModel()).map(df, "{user.name!r} [{n:>3}]")
    assert list(frame["answer"]) == [label_of("'ada' [  1]"), label_of("'lin' [ 22]")]


# --- resume -----------------------------------------------------------------------------------

FORMS: dict[str, tuple[Any, str | None, list[str]]] = {
    "strings": (lambda: ["one", "two", "three"], "Say {input}",
                ["Say one", "Say two", "Say three"]),
    "dicts": (lambda: [{"t": "a", "n": 1}, {"t": "b", "n": 2}, {"t": "c", "n": 3}],
              "{t}{n}", ["a1", "b2", "c3"]),
    # Different keys, in different orders: the columns are their union.
    "dicts-with-different-keys": (
        lambda: [{"t": "a"}, {"n": 2, "t": "b"}, {"u": [1, (2, 3)], "t": "c"}], None,
        ['{"t": "a"}', '{"n": 2, "t": "b"}', '{"u": [1, [2, 3]], "t": "c"}']),
    # Values JSON keeps otherwise (a tuple, a dict with int and str keys) read the same
    # in memory, from the store and after the resume.
    "dicts-with-nested-values": (
        lambda: [{"t": "a", "u": {1: "x", "k": (2, 3)}}, {"t": "b", "u": ()},
                 {"t": "c", "u": None}], "{t} {u}",
        ["a {'1': 'x', 'k': [2, 3]}", "b []", "c None"]),
    "dataframe": (lambda: pd.DataFrame({"t": ["a", "b", "c"], "s": [0.5, math.nan, 2.0]}),
                  "{t} {s}", ["a 0.5", "b None", "c 2.0"]),
}


@pytest.mark.parametrize("form", list(FORMS))
async def test_resume_goes_on_with_every_input_form(form: str,
                                                    store_target: str | Path) -> None:
    # A run over dicts with different keys was refused by its own resume ("other inputs
    # ... BatchRun.resume() it"): the resume filled in the keys a row lacked, so its
    # inputs were no longer the run's.
    make, template, prompts = FORMS[form]
    store = SessionStore(store_target)
    agent = Agent("a", model=RowModel())
    run = agent.map(make(), template, store=store, run_id="r_form")
    run.cancel()  # before it ran a row
    await run
    resumed = BatchRun.resume("r_form", store=store, agent=agent)
    frame = await resumed
    assert list(frame["status"]) == ["done"] * 3
    assert list(frame["answer"]) == [label_of(prompt) for prompt in prompts]
    assert list(frame.columns[:len(run.inputs.columns)]) == run.inputs.columns
    # The same inputs given again under the run id are the run itself, not other inputs.
    again = await agent.map(make(), template, store=store, run_id="r_form")
    assert list(again["session_id"]) == list(frame["session_id"])
    store.close()


async def test_a_refused_run_id_names_a_remedy_that_works(tmp_path: Path) -> None:
    # The refusal of a run id in the store with other inputs names what to do instead —
    # and that call works (not the call that was just refused).
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel())
    await agent.map([{"t": "a"}, {"u": "b"}], store=store, run_id="r1")
    with pytest.raises(ValueError, match="other inputs") as refused:
        agent.map([{"t": "x"}, {"u": "y"}], store=store, run_id="r1")
    assert "BatchRun.resume('r1', store=…)" in str(refused.value)
    frame = await BatchRun.resume("r1", store=store, agent=agent)
    assert list(frame["status"]) == ["done", "done"]


async def test_resume_takes_the_stored_rows_whatever_digest_the_run_has(
        tmp_path: Path) -> None:
    # The digest only tells a run id given again with other inputs: a resume, whose inputs
    # are the stored rows themselves, goes on even when the stored digest is another (a
    # run stored with another way of computing it).
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel())
    run = agent.map(["a", "b"], store=store, run_id="r_digest")
    run.cancel()
    await run
    rows = BatchRows(store, "r_digest")
    definition = rows.definition()
    assert definition is not None
    rows.update_definition({**definition, "inputs_digest": "0" * 64})
    frame = await BatchRun.resume("r_digest", store=store, agent=agent)
    assert list(frame["status"]) == ["done", "done"]
    with pytest.raises(ValueError, match="other inputs"):
        agent.map(["a", "c"], store=store, run_id="r_digest")


# --- what a validator raises: the row fails, or (an interrupt) the run stops ------------------

class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("this exception cannot be shown")


class _Own(BaseException):
    pass


def _raising(exc: BaseException) -> type[BaseModel]:
    class Raising(BaseModel):
        category: str

        @field_validator("category", mode="before")
        @classmethod
        def known(cls, value: Any) -> Any:
            if value == "b":
                raise exc
            return value

    return Raising


@pytest.mark.parametrize("exc", [
    SystemExit(3), GeneratorExit(), _Own("own"), asyncio.CancelledError(), _Unprintable(),
    KeyError("x" * 5_000_000)],
    ids=["SystemExit", "GeneratorExit", "own-BaseException", "CancelledError",
         "str-raises", "huge-message"])
async def test_whatever_a_validator_raises_but_an_interrupt_fails_only_its_row(
        exc: BaseException, tmp_path: Path) -> None:
    # SystemExit, GeneratorExit, a BaseException of the user's own, a CancelledError no
    # one asked for, an exception that cannot even be shown, one with a message of
    # megabytes: the user's code failing for one row. That row fails (its error bounded,
    # with the traceback), the others are done, and no row keeps its lease.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel(answer=_category_answer))
    frame = await asyncio.wait_for(agent.map(
        ["about a", "about b", "about c"], "Ticket {input}", output=_raising(exc),
        store=store, run_id="r_raises", concurrency=1), 30)
    assert list(frame["status"]) == ["done", "failed", "done"]
    error = frame["error"][1]
    assert type(exc).__name__ in error and "in known" in error
    assert len(error) < 30_000
    stored = BatchRows(store, "r_raises").all()
    assert [(row.state, row.lease_owner) for row in stored] == [
        ("done", None), ("failed", None), ("done", None)]
    store.close()


async def test_a_keyboard_interrupt_in_a_validator_stops_the_run_and_gives_its_rows_back(
        store_target: str | Path) -> None:
    # A kernel interrupt that lands in a validator stops the run as run.cancel() does —
    # never the kernel's event loop: `await run` returns, the row in hand and the rows
    # not begun are left for a resume, and none keeps a lease.
    store = SessionStore(store_target)
    agent = Agent("a", model=RowModel(answer=_category_answer))
    frame = await asyncio.wait_for(agent.map(
        ["about a", "about b", "about c"], "Ticket {input}",
        output=_raising(KeyboardInterrupt()), store=store, run_id="r_interrupt",
        concurrency=1), 30)
    assert list(frame["status"]) == ["done", "cancelled", "cancelled"]
    stored = BatchRows(store, "r_interrupt").all()
    assert [(row.state, row.lease_owner) for row in stored] == [
        ("done", None), ("queued", None), ("queued", None)]
    began = time.monotonic()
    again = await asyncio.wait_for(BatchRun.resume(
        "r_interrupt", store=store, agent=agent, output=_raising(ValueError("b"))), 20)
    assert time.monotonic() - began < 10
    assert list(again["status"]) == ["done", "failed", "done"]
    store.close()


@pytest.mark.parametrize("other", [True, 1.0, "1"])
async def test_a_run_id_given_again_with_values_that_only_compare_equal_is_refused(
        other: Any, tmp_path: Path) -> None:
    # 1 == True == 1.0 in Python, but they are other inputs: "{x}" fills in "True" or
    # "1.0" where the stored run has "1". A run id given again with them is refused, as
    # with any other inputs, and the stored run's answers are not handed back for them.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel())
    await agent.map([{"x": 1}], "Count {x}", store=store, run_id="r_one")
    with pytest.raises(ValueError, match="other inputs"):
        agent.map([{"x": other}], "Count {x}", store=store, run_id="r_one")
    again = await agent.map([{"x": 1}], "Count {x}", store=store, run_id="r_one")
    assert list(again["answer"]) == [label_of("Count 1")]
    store.close()


async def test_a_format_spec_from_a_row_that_python_refuses_fails_with_a_bounded_error(
        ) -> None:
    # Python's own refusal of a spec quotes the whole spec: a spec of a megabyte taken from
    # a row would be stored whole in that row's error.
    rows = [{"x": "ab", "y": ">4"}, {"x": "ab", "y": "z" * 1_000_000}]
    frame = await Agent("a", model=RowModel()).map(rows, "[{x:{y}}]", concurrency=1)
    assert list(frame["status"]) == ["done", "failed"]
    assert "Invalid format specifier" in frame["error"][1]
    assert len(frame["error"][1]) < 30_000
