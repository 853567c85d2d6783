"""The wire types agree on both sides: every TypedDict the widgets send or receive has a TS
interface of the same name in ``js/src``, with the same field names and the same
optionality (``NotRequired`` / ``total=False`` in Python, ``?`` in TS) — as
``tests/test_labels.py`` checks the labels. A field renamed, added or made optional on
one side only fails here."""

from __future__ import annotations

import importlib
import pkgutil
import re
import typing
from pathlib import Path

import pytest

import neta_nb.widgets

ROOT = Path(__file__).resolve().parents[2]
TS_SOURCES = ROOT / "js" / "src"

TWINS = {
    # Python name: TS name, where one shape has two names.
    "SubagentFullTextRequest": "FullTextRequest",  # the chat view's request, one card's
    "SwitchAgentReply": "SessionReply",  # the sidebar's replies have the same shape
    "CardFullText": "FullText",
}
REPLIES = ("OkReply", "ErrorReply")
"""TS reads both as one ``Reply<T>`` (``ok`` says which): checked against its union."""

PYTHON_ONLY: dict[str, str] = {}
"""TypedDicts with no TS twin, each with the reason (none so far)."""

_INTERFACE = re.compile(
    r"^(?:export )?interface (\w+)(?:<[^>]*>)?\s*(?:extends ([^{]+))?\{", re.M)
_PICK = re.compile(r'Pick<(\w+),\s*([^>]+)>')
_EMPTY = re.compile(r"^(?:export )?type (\w+) = Record<string, never>;", re.M)
_FIELD = re.compile(r"^  (?:readonly )?(\w+)(\?)?:", re.M)


def ts_interfaces() -> dict[str, dict[str, bool]]:
    """Every exported interface of ``js/src``: field name -> optional."""
    found: dict[str, dict[str, bool]] = {}
    parents: dict[str, list[str]] = {}
    for source in sorted(TS_SOURCES.rglob("*.ts")):
        text = source.read_text()
        for match in _EMPTY.finditer(text):
            found[match.group(1)] = {}
        for match in _INTERFACE.finditer(text):
            end = text.index("\n}", match.end())
            body = text[match.end():end]
            fields = {m.group(1): bool(m.group(2)) for m in _FIELD.finditer(body)}
            name = match.group(1)
            assert name not in found, f"interface {name} is declared twice in js/src"
            found[name] = fields
            if match.group(2):
                parents[name] = [match.group(2).strip()]
    for name, bases in parents.items():
        for base in bases:
            pick = _PICK.fullmatch(base)
            parent = pick.group(1) if pick else base.split("<")[0]
            picked = set(re.findall(r'"(\w+)"', pick.group(2))) if pick else None
            for field, optional in found.get(parent, {}).items():
                if picked is None or field in picked:
                    found[name].setdefault(field, optional)
    return found


def python_typed_dicts() -> dict[str, dict[str, bool]]:
    """Every TypedDict defined in ``neta_nb.widgets``: field name -> optional."""
    found: dict[str, dict[str, bool]] = {}
    for info in pkgutil.walk_packages(neta_nb.widgets.__path__, "neta_nb.widgets."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not (typing.is_typeddict(value) and value.__module__ == module.__name__):
                continue
            hints = typing.get_type_hints(value, include_extras=True)
            fields = {}
            for field, hint in hints.items():
                origin = typing.get_origin(hint)
                optional = (origin is typing.NotRequired
                            or (not value.__total__ and origin is not typing.Required))
                fields[field] = optional
            found[name] = fields
    return found


PYTHON = python_typed_dicts()
TS = ts_interfaces()


def test_both_sides_were_read() -> None:
    # A parser that found nothing would let every comparison below pass.
    assert len(PYTHON) >= 40 and len(TS) >= 60
    assert {"ChatItem", "ChatCard", "SubagentPart", "BatchMessage", "ChatSnapshot"} <= (
        PYTHON.keys() & TS.keys())


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_every_python_wire_type_has_its_ts_twin_with_the_same_fields(name: str) -> None:
    if name in PYTHON_ONLY:
        pytest.skip(PYTHON_ONLY[name])
    twin = TWINS.get(name, name)
    if name in REPLIES:
        python = {f: o for reply in REPLIES for f, o in PYTHON[reply].items()}
        python = {f: f in ("result", "error") for f in python}  # in one of the two only
        twin = "Reply"
    else:
        python = PYTHON[name]
    assert twin in TS, f"{name} has no `interface {twin}` in js/src"
    ts = TS[twin]
    assert sorted(python) == sorted(ts), (
        f"{name}: only in Python {sorted(set(python) - set(ts))}, "
        f"only in TS {sorted(set(ts) - set(python))}")
    differ = {field: (python[field], ts[field]) for field in python
              if python[field] != ts[field]}
    assert not differ, f"{name}: optional (Python, TS) differs for {differ}"
