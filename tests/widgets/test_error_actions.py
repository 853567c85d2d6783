"""Fix and Explain on a cell's error (``error_action``): the page hands the press to a
chat view, the kernel-side chat makes the prompt and starts the turn. The prompt names the
failing cell by its notebook id (what ``edit_cell`` takes) and by the run it was
(``@In[n]``), and its error (``@error`` when the kernel's last exception is that cell's,
else the error output the page showed, quoted as data); Fix asks for the corrected cell
through ``edit_cell``, Explain for an explanation that changes nothing. The model reads the
mentions resolved. A chat running a turn, a chat with no session and a malformed request
are refused with the reason, and nothing is sent."""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from neta_nb.messages import MentionPart
from neta_nb.runtime.mentions.mentions import find_mentions
from neta_nb.tools.notebook import kernel
from neta_nb.tools.notebook.texts import TRACEBACK_CHARS
from neta_nb.widgets import ChatView
from neta_nb.widgets.base import RequestError
from neta_nb.widgets.chat.requests.error_actions import PROMPT_SOURCE_CHARS, error_prompt

from ..support.sessions import answer, make_session
from ..support.timing import wait_until
from .conftest import SentMessages

CELL = "ratings = [1, 2]\ntotal = sum(ratings) / 0"
TRACEBACK = ["\x1b[0;31m---------------------------------------------------------\x1b[0m",
             "\x1b[0;31mZeroDivisionError\x1b[0m  Traceback (most recent call last)",
             "Cell \x1b[0;32mIn[2], line 2\x1b[0m\n total = sum(ratings) / 0",
             "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]


def _request(action: str = "fix", **changes: Any) -> dict[str, Any]:
    return {"action": action, "cell_id": "c-cast", "execution_count": 2, "source": CELL,
            "error": {"ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": TRACEBACK}, **changes}


def _namespace() -> dict[str, Any]:
    return {"In": ["", "import math", CELL + "\n"], "Out": {}}


@pytest.fixture
def raised_in_cell_2(monkeypatch: pytest.MonkeyPatch) -> BaseException:
    return _raise_in_cell_2(monkeypatch)


def _raise_in_cell_2(monkeypatch: pytest.MonkeyPatch) -> BaseException:
    """Cell 2 ran and raised, as IPython runs it: its compiler maps the cell's file name to
    its number, and the error is the kernel's last."""
    cell_file = "/tmp/ipykernel_1/2.py"
    shell = SimpleNamespace(compile=SimpleNamespace(_filename_map={cell_file: 2}))
    monkeypatch.setattr(kernel, "_shell", lambda: shell)
    try:
        exec(compile(CELL, cell_file, "exec"), {})
    except ZeroDivisionError as raised:
        monkeypatch.setattr(sys, "last_value", raised, raising=False)
        monkeypatch.setattr(sys, "last_exc", raised, raising=False)
        return raised
    raise AssertionError("the cell did not raise")


def test_fix_names_the_cell_and_its_error_by_mentions(raised_in_cell_2: BaseException) -> None:
    prompt = error_prompt(_request(), _namespace())
    assert prompt.startswith("Cell `c-cast` (In[2]) of this notebook failed with "
                             "`ZeroDivisionError: division by zero`.\n@In[2] @error\n")
    assert "propose the corrected cell with edit_cell on cell id `c-cast`" in prompt
    assert "run nothing" in prompt
    assert "Explain" not in prompt
    # The mentions say it all: the page's copy of the traceback is not repeated.
    assert "Traceback" not in prompt and "\x1b" not in prompt


def test_explain_asks_for_an_explanation_and_no_change(raised_in_cell_2: BaseException) -> None:
    prompt = error_prompt(_request("explain"), _namespace())
    assert "@In[2] @error" in prompt
    assert "Explain what this error means" in prompt
    assert "Change nothing in the notebook." in prompt
    assert "edit_cell" not in prompt


def test_another_cells_error_is_not_mentioned_the_pages_is_quoted(
        raised_in_cell_2: BaseException) -> None:
    # Cell 3 failed on the page; the kernel's last error is cell 2's.
    namespace = {"In": [*_namespace()["In"], "1 / 0"], "Out": {}}
    prompt = error_prompt(_request(cell_id="c-three", execution_count=3, source="1 / 0"),
                          namespace)
    assert "Cell `c-three` (In[3])" in prompt
    assert "@In[3]\n" in prompt and "@error" not in prompt
    assert "ZeroDivisionError: division by zero\n```" in prompt  # the page's, uncoloured
    assert "\x1b" not in prompt and "Cell In[2], line 2" in prompt


def test_a_cell_edited_or_from_another_kernel_is_named_by_id_with_its_text() -> None:
    # The kernel's run [2] is not this cell's text (edited since, or a restarted kernel):
    # no @In[2], no @error; the cell's text and the page's error instead.
    prompt = error_prompt(_request(source="x = `@df` @error"), _namespace())
    assert prompt.startswith("Cell `c-cast` of this notebook failed with `ZeroDivisionError")
    assert "In[2]" not in prompt.split("\n")[0] and "@In[2]" not in prompt
    assert "The cell's text now:\n```\nx = `@df` @error\n```" in prompt
    # Quoted as code: nothing in the cell's text or the traceback is a mention.
    assert find_mentions(prompt) == []
    no_run = error_prompt(_request(execution_count=None), _namespace())
    assert "@In[" not in no_run and "The cell's text now:" in no_run


@pytest.mark.parametrize(("bad", "why"), [
    ({"action": "rewrite"}, "'action' of fix, explain"),
    ({"cell_id": ""}, "'cell_id'"),
    ({"execution_count": "2"}, "'execution_count'"),
    ({"execution_count": True}, "'execution_count'"),
    ({"source": None}, "'source'"),
    ({"error": "ZeroDivisionError"}, "'error' output"),
])
def test_a_malformed_request_is_refused_with_what_is_wrong(bad: dict[str, Any],
                                                           why: str) -> None:
    with pytest.raises(RequestError, match=why):
        error_prompt(_request(**bad), _namespace())


def _press(chat: ChatView, sent: SentMessages, request: dict[str, Any]) -> dict[str, Any]:
    request_id = f"e{len(sent)}"
    chat._on_custom_message(chat, {"kind": "error_action", "id": request_id, **request}, [])
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == request_id]
    return reply


async def test_the_chat_sends_the_prompt_and_the_model_reads_the_cell_and_error(
        monkeypatch: pytest.MonkeyPatch, sent: SentMessages) -> None:
    session, _rec, provider = make_session([answer("Divide by the count.")])
    session.namespace.update(_namespace())
    chat = ChatView(session)
    _raise_in_cell_2(monkeypatch)  # after the view is bound: it watches the real shell
    reply = _press(chat, sent, _request())
    assert reply["ok"] is True, reply
    await wait_until(lambda: not session.running and len(session.messages) == 2)
    prompt = session.messages[0]
    assert prompt.text == error_prompt(_request(), _namespace())
    blocks = {part.mention: part.text for part in prompt.parts
              if isinstance(part, MentionPart)}
    assert set(blocks) == {"@In[2]", "@error"}
    assert "total = sum(ratings) / 0" in blocks["@In[2]"]
    assert "ZeroDivisionError: division by zero" in blocks["@error"]
    assert len(provider.requests) == 1
    chat.close()


async def test_refused_while_a_turn_runs_and_without_a_session(sent: SentMessages) -> None:
    gate = asyncio.Event()
    session, _rec, provider = make_session([[gate.wait, *answer("busy")]])
    session.namespace.update(_namespace())
    chat = ChatView(session)
    task = session.start("something long")
    await wait_until(lambda: session.running)
    reply = _press(chat, sent, _request())
    assert reply["ok"] is False and "The chat is answering" in reply["error"]
    gate.set()
    await task
    assert [m.text for m in session.messages] == ["something long", "busy"]
    assert len(provider.requests) == 1
    chat.close()

    bare = ChatView()
    reply = _press(bare, sent, _request())
    assert reply["ok"] is False and "no session is bound" in reply["error"]
    bare.close()


@pytest.mark.parametrize("evalue", [
    "'@timestamp'",                       # a field name (Elasticsearch's) in a KeyError
    "no such file (@file:secret.env)",    # would attach a file of the working directory
    "column `a @df",                      # an odd backtick would pair with the prompt's own
    "(@this) ``` @cells[:]",
])
def test_nothing_in_the_error_message_is_a_mention(raised_in_cell_2: BaseException,
                                                   evalue: str) -> None:
    """The error's one line is the notebook's text, quoted as code: an ``@`` in it reads
    nothing, and a backtick in it hides none of the prompt's own mentions."""
    error = {"ename": "KeyError", "evalue": evalue, "traceback": []}
    prompt = error_prompt(_request(error=error), _namespace())
    assert [m.name for m in find_mentions(prompt)] == ["@In[2]", "@error"]
    assert evalue in prompt.split("\n")[0]
    quoted = error_prompt(_request(error=error, source="changed"), _namespace())
    assert find_mentions(quoted) == []


async def test_fix_on_a_key_error_naming_a_field_with_an_at_sends_the_prompt(
        monkeypatch: pytest.MonkeyPatch, sent: SentMessages) -> None:
    session, _rec, _provider = make_session([answer("The field is missing.")])
    session.namespace.update(_namespace())
    chat = ChatView(session)
    _raise_in_cell_2(monkeypatch)
    error = {"ename": "KeyError", "evalue": "'@timestamp'", "traceback": []}
    reply = _press(chat, sent, _request(error=error))
    assert reply["ok"] is True, reply
    await wait_until(lambda: not session.running and len(session.messages) == 2)
    assert {part.mention for part in session.messages[0].parts
            if isinstance(part, MentionPart)} == {"@In[2]", "@error"}
    chat.close()


def test_a_cell_id_that_is_no_notebook_id_is_refused() -> None:
    for bad in ("x` @file:secret.env `y", "a b", "é", "c" * 65):
        with pytest.raises(RequestError, match="'cell_id'"):
            error_prompt(_request(cell_id=bad), _namespace())


def test_a_long_cell_text_is_cut_in_the_prompt() -> None:
    source = "data = [\n" + "    1,\n" * 100_000 + "]\n"
    prompt = error_prompt(_request(source=source), _namespace())
    assert len(prompt) < PROMPT_SOURCE_CHARS + 3_000
    assert "(cut: " in prompt and "read_notebook(cell_id=\"c-cast\")" in prompt
    assert prompt.count("\n    1,") < 100_000


def test_a_huge_traceback_keeps_its_end_and_costs_only_what_the_prompt_uses() -> None:
    frames = [f"\x1b[0;31mframe {n}\x1b[0m" for n in range(1_000_000)] + ["KeyError: 'profit'"]

    class Counted(list[str]):
        """A traceback that counts how many of its lines were read."""

        read = 0

        def __getitem__(self, index: Any) -> Any:
            Counted.read += 1
            return super().__getitem__(index)

        def __iter__(self) -> Any:
            for line in super().__iter__():
                Counted.read += 1
                yield line

    traceback = Counted(frames)
    prompt = error_prompt(_request(error={"ename": "KeyError", "evalue": "'profit'",
                                          "traceback": traceback}, execution_count=None),
                          _namespace())
    assert prompt.count("KeyError: 'profit'") >= 1 and "frame 999999" in prompt
    assert "\x1b" not in prompt
    assert len(prompt) < TRACEBACK_CHARS + 3_000
    assert "earlier lines)" in prompt and "frame 0\n" not in prompt
    assert Counted.read < 10_000  # from the end, only as far as needed
