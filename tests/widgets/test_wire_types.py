"""The wire types agree on both sides: every TypedDict the widgets send or receive has a TS
interface of the same name in ``js/src``, with the same fields, the same optionality
(``NotRequired`` / ``total=False`` in Python, ``?`` in TS) and the same value types — as
``tests/test_labels.py`` checks the labels. Value types are compared as JSON sees them:
``str``/``string``, ``int``/``float``/``number``, ``bool``/``boolean``, ``None``/``null``,
``Literal[...]`` / string-literal unions member for member, lists/arrays, ``dict[str, X]`` /
``Record<string, X>``, ``Any``/``unknown``, and nested records by name (each of which is
compared in turn, wherever it is defined). A field renamed, added, made optional, retyped or
given another literal on one side only fails here."""

from __future__ import annotations

import collections.abc
import enum
import importlib
import pkgutil
import re
import types
import typing
from pathlib import Path

import pydantic
import pytest

import neta_nb.events
import neta_nb.messages
import neta_nb.todo
import neta_nb.widgets

ROOT = Path(__file__).resolve().parents[2]
TS_SOURCES = ROOT / "js" / "src"

TWINS = {
    # Python name: TS name, where one shape has two names.
    "SubagentFullTextRequest": "FullTextRequest",  # the chat view's request, one card's
    "SwitchAgentReply": "SessionReply",  # the sidebar's replies have the same shape
    "CardFullText": "FullText",
    # The dumps of the core's models (see DUMPS) have the models' names in TS.
    "TodoItemDict": "TodoItem",
    "TurnUsageDict": "TurnUsage",
    "ContextUsageDict": "ContextUsage",
    "DisplayItemDict": "DisplayItem",
    "ApprovalPreviewDict": "ApprovalPreview",
    "PreviewCellDict": "PreviewCell",
    "FileLocationDict": "FileLocation",
}
REPLIES = ("OkReply", "ErrorReply")
"""TS reads both as one ``Reply<T>`` (``ok`` says which): checked against its union."""

PYTHON_ONLY: dict[str, str] = {}
"""TypedDicts with no TS twin, each with the reason (none so far)."""

DUMPS: dict[str, type[pydantic.BaseModel]] = {
    "TodoItemDict": neta_nb.todo.TodoItem,
    "TurnUsageDict": neta_nb.events.TurnUsage,
    "ContextUsageDict": neta_nb.events.ContextUsage,
    "DisplayItemDict": neta_nb.messages.DisplayItem,
    "ApprovalPreviewDict": neta_nb.events.ApprovalPreview,
    "PreviewCellDict": neta_nb.events.PreviewCell,
    "FileLocationDict": neta_nb.messages.FileLocation,
}
"""TypedDicts that describe a core model's ``model_dump()``: the same fields, value types
and literals as the model. A field the widgets add (``omitted``) is optional; a field the
model dumps may be optional in the TypedDict (and in TS), where state saved before the field
existed lacks it."""

OPEN_RECORDS = {
    ("CommandRequest", "command"): "a command of the event protocol, any of "
    "neta_nb.events.Command, checked by neta_nb.events.parse_command where it arrives",
}
"""Fields TS types as ``{ type: string } & Record<string, unknown>`` and Python as
``Mapping[str, Any]``: each with where it is checked."""

NULL_FOR_EMPTY = {
    ("ChatSnapshot", "current"): "TurnUsage",
    ("ChatSnapshot", "context"): "ContextUsage",
}
"""Known and pinned: the chat view's ``current``/``context`` traits are ``{}`` before a
session is bound (``context`` also in a read-only chat), which TS types as ``null``. Each is
checked to differ by exactly that ``| null``; mending it on the Python side (``None`` for
"none yet") makes the check fail, and the entry goes."""

# --- a value type, as JSON sees it --------------------------------------------------------
# A type is a frozenset of atoms (its union's members); an atom is a tuple:
# ("str",), ("num",), ("null",), ("any",), ("lit", value) — ``bool`` is the literals True and
# False —, ("arr", type), ("map", type) for a record with string keys, ("ref", name) for a
# named record, ("obj", fields) for an inline TS object, ("param",) for a TS type parameter.
Atom = tuple[typing.Any, ...]
Type = frozenset[Atom]
BOOL: Type = frozenset({("lit", True), ("lit", False)})


def show(value: Type) -> str:
    """A type written as TS would write it, members sorted (for the messages)."""
    def atom(a: Atom) -> str:
        match a:
            case ("lit", bool() as flag):
                return "true" if flag else "false"
            case ("lit", text):
                return f'"{text}"'
            case ("arr", item):
                return f"({show(item)})[]"
            case ("map", item):
                return f"Record<string, {show(item)}>"
            case ("ref", name):
                return str(name)
            case ("obj", fields):
                return "{ " + "; ".join(f"{n}{'?' if o else ''}: {show(t)}"
                                        for n, o, t in fields) + " }"
        return {"str": "string", "num": "number", "null": "null", "any": "unknown",
                "param": "T"}[a[0]]
    return " | ".join(sorted(atom(a) for a in value))


# --- the TS side ----------------------------------------------------------------------------
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_INTERFACE = re.compile(
    r"^(?:export )?interface (\w+)(?:<([^>]*)>)?\s*(?:extends ([^{]+))?\{", re.M)
_ALIAS = re.compile(r"^(?:export )?type (\w+)(?:<[^=]*>)? =", re.M)
_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\w+|=>|\S)')


def _tokens(text: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


def _until(text: str, start: int, stop: str) -> int:
    """The index of the first ``stop`` character at bracket depth 0 from ``start``."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "({[<":
            depth += 1
        elif c in ")}]>" and not (c == ">" and text[i - 1] == "="):
            depth -= 1
            if depth < 0:
                return i
        elif c == stop and depth == 0:
            return i
    return len(text)


class TsSide:
    """Every exported-or-not interface and type alias of ``js/src``, their fields typed."""

    def __init__(self) -> None:
        self.bodies: dict[str, tuple[str, list[str], str | None]] = {}
        self.aliases: dict[str, set[str]] = {}
        for source in sorted(TS_SOURCES.rglob("*.ts")):
            text = _COMMENT.sub("", source.read_text())
            for match in _INTERFACE.finditer(text):
                name = match.group(1)
                assert name not in self.bodies, f"interface {name} is declared twice in js/src"
                end = _until(text, match.end(), "}")
                params = [p.split("=")[0].split(" extends ")[0].strip()
                          for p in (match.group(2) or "").split(",") if p.strip()]
                self.bodies[name] = (text[match.end():end], params,
                                     match.group(3).strip() if match.group(3) else None)
            for match in _ALIAS.finditer(text):
                end = _until(text, match.end(), ";")
                self.aliases.setdefault(match.group(1), set()).add(
                    " ".join(text[match.end():end].split()))
        self._fields: dict[str, dict[str, tuple[bool, Type]]] = {}

    def fields(self, name: str) -> dict[str, tuple[bool, Type]]:
        """Interface ``name``'s fields (inherited ones too): field -> (optional, type)."""
        if name in self._fields:
            return self._fields[name]
        if name not in self.bodies:
            alias = self.aliases.get(name)
            assert alias == {"Record<string, never>"}, f"no `interface {name}` in js/src"
            return {}
        body, params, extends = self.bodies[name]
        found = self._object(_tokens(body), set(params))
        if extends:
            tokens = _tokens(extends)
            if tokens[0] == "Pick":
                parent = self.fields(tokens[2])
                picked = {t.strip("\"'") for t in tokens[3:] if t[0] in "\"'"}
                inherited = {f: v for f, v in parent.items() if f in picked}
            else:
                inherited = self.fields(tokens[0])
            for field, value in inherited.items():
                found.setdefault(field, value)
        self._fields[name] = found
        return found

    def _object(self, tokens: list[str], params: set[str]) -> dict[str, tuple[bool, Type]]:
        parser = _TypeParser(self, tokens, params)
        found = {}
        while parser.peek() is not None:
            if parser.peek() == "readonly":
                parser.take()
            field = parser.take()
            optional = parser.peek() == "?"
            if optional:
                parser.take()
            if parser.peek() == "(":  # a method: not a wire field
                raise AssertionError(f"method {field} in a wire interface")
            parser.expect(":")
            found[field] = (optional, parser.union())
            if parser.peek() in (";", ","):
                parser.take()
        return found

    def alias(self, name: str) -> Type | None:
        definitions = self.aliases.get(name)
        if not definitions:
            return None
        assert len(definitions) == 1, f"type {name} has {len(definitions)} definitions"
        (definition,) = definitions
        return _TypeParser(self, _tokens(definition), set()).whole()


class _TypeParser:
    """A TS type expression, read into a :data:`Type`."""

    SIMPLE: typing.ClassVar[dict[str, Type]] = {
        "string": frozenset({("str",)}), "number": frozenset({("num",)}),
        "boolean": BOOL, "true": frozenset({("lit", True)}),
        "false": frozenset({("lit", False)}), "null": frozenset({("null",)}),
        "unknown": frozenset({("any",)}), "any": frozenset({("any",)}),
    }

    def __init__(self, ts: TsSide, tokens: list[str], params: set[str]) -> None:
        self.ts, self.tokens, self.params, self.at = ts, tokens, params, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expect(self, token: str) -> None:
        got = self.take()
        assert got == token, f"expected {token!r}, found {got!r} in {' '.join(self.tokens)}"

    def whole(self) -> Type:
        value = self.union()
        assert self.peek() in (None, ";"), f"unread: {self.tokens[self.at:]}"
        return value

    def union(self) -> Type:
        if self.peek() == "|":
            self.take()
        members = set(self.intersection())
        while self.peek() == "|":
            self.take()
            members |= self.intersection()
        return frozenset(members)

    def intersection(self) -> Type:
        value = self.postfix()
        while self.peek() == "&":
            self.take()
            other = self.postfix()
            # `{ type: string } & Record<string, unknown>`: a record with one field known.
            objects = [a for a in value | other if a[0] == "obj"]
            records = [a for a in value | other if a[0] == "map"]
            assert len(objects) == 1 and len(records) == 1 and len(value | other) == 2, (
                f"unsupported intersection {show(value)} & {show(other)}")
            value = frozenset({("obj", tuple(sorted(
                objects[0][1] + (("...", True, records[0][1]),))))})
        return value

    def postfix(self) -> Type:
        value = self.primary()
        while self.peek() == "[" and self.tokens[self.at + 1] == "]":
            self.at += 2
            value = frozenset({("arr", value)})
        return value

    def primary(self) -> Type:
        token = self.take()
        if token[0] in "\"'":
            return frozenset({("lit", token[1:-1])})
        if token in self.SIMPLE:
            return self.SIMPLE[token]
        if token == "(":
            value = self.union()
            self.expect(")")
            return value
        if token == "{":
            depth, start = 1, self.at
            while depth:
                t = self.take()
                depth += {"{": 1, "}": -1}.get(t, 0)
            fields = self.ts._object(self.tokens[start:self.at - 1], self.params)
            return frozenset({("obj", tuple(sorted(
                (n, o, t) for n, (o, t) in fields.items())))})
        if token in self.params:
            return frozenset({("param",)})
        args: list[Type] = []
        if self.peek() == "<":
            self.take()
            args.append(self.union())
            while self.peek() == ",":
                self.take()
                args.append(self.union())
            self.expect(">")
        if token == "Record":
            assert args[0] == frozenset({("str",)}), f"Record keyed by {show(args[0])}"
            return frozenset({("map", args[1])})
        if token in ("Array", "ReadonlyArray"):
            return frozenset({("arr", args[0])})
        assert not args, f"unsupported generic {token}<…>"
        if token in self.ts.bodies:
            return frozenset({("ref", token)})
        alias = self.ts.alias(token)
        assert alias is not None, f"unknown TS type {token}"
        return alias


# --- the Python side ------------------------------------------------------------------------
_PY_SIMPLE: dict[object, Type] = {
    typing.Any: frozenset({("any",)}), object: frozenset({("any",)}), bool: BOOL,
    str: frozenset({("str",)}), int: frozenset({("num",)}), float: frozenset({("num",)}),
    None: frozenset({("null",)}), types.NoneType: frozenset({("null",)}),
}


def py_type(hint: object, reached: dict[str, type]) -> Type:
    """A Python annotation as a :data:`Type`; TypedDicts it names go into ``reached``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.NotRequired, typing.Required):
        return py_type(args[0], reached)
    if hint in _PY_SIMPLE:
        return _PY_SIMPLE[hint]
    if isinstance(hint, type) and issubclass(hint, enum.StrEnum):
        return frozenset(("lit", member.value) for member in hint)
    if origin is typing.Literal:
        return frozenset(("lit", value) for value in args)
    if origin in (typing.Union, types.UnionType):
        return frozenset().union(*(py_type(arg, reached) for arg in args))
    if origin in (list, collections.abc.Sequence):
        return frozenset({("arr", py_type(args[0], reached))})
    if origin in (dict, collections.abc.Mapping):
        assert args[0] is str, f"a wire dict is keyed by str, not {args[0]}"
        return frozenset({("map", py_type(args[1], reached))})
    if isinstance(hint, type) and typing.is_typeddict(hint):
        reached[hint.__name__] = hint
        return frozenset({("ref", TWINS.get(hint.__name__, hint.__name__))})
    dumped_as = next((name for name, model in DUMPS.items() if model is hint), None)
    if dumped_as is not None:  # a core model inside another's dump: its TypedDict
        return frozenset({("ref", TWINS.get(dumped_as, dumped_as))})
    raise AssertionError(f"no wire type for the annotation {hint!r}")


def typed_dict_fields(value: type, reached: dict[str, type]) -> dict[str, tuple[bool, Type]]:
    """A TypedDict's fields: field -> (optional, type)."""
    hints = typing.get_type_hints(value, include_extras=True)
    fields = {}
    for field, hint in hints.items():
        origin = typing.get_origin(hint)
        optional = (origin is typing.NotRequired
                    or (not getattr(value, "__total__", True) and origin is not typing.Required))
        fields[field] = (optional, py_type(hint, reached))
    return fields


def python_typed_dicts() -> dict[str, dict[str, tuple[bool, Type]]]:
    """Every TypedDict defined in ``neta_nb.widgets`` or exported by one of its modules (a
    reply the runtime shapes), and every one their fields name (wherever defined): field ->
    (optional, type)."""
    pending: dict[str, type] = {}
    for info in pkgutil.walk_packages(neta_nb.widgets.__path__, "neta_nb.widgets."):
        module = importlib.import_module(info.name)
        exported = set(getattr(module, "__all__", ()))
        for name, value in vars(module).items():
            if typing.is_typeddict(value) and (value.__module__ == module.__name__
                                               or name in exported):
                assert pending.setdefault(name, value) is value, (
                    f"two TypedDicts named {name}")
    found: dict[str, dict[str, tuple[bool, Type]]] = {}
    while pending:
        name, value = pending.popitem()
        reached: dict[str, type] = {}
        found[name] = typed_dict_fields(value, reached)
        for other, cls in reached.items():
            if other not in found:
                pending[other] = cls
    return found


PYTHON = python_typed_dicts()
TS = TsSide()


def test_both_sides_were_read() -> None:
    # A parser that found nothing would let every comparison below pass.
    assert len(PYTHON) >= 40 and len(TS.bodies) >= 60
    assert {"ChatItem", "ChatCard", "SubagentPart", "BatchMessage", "ChatSnapshot"} <= (
        PYTHON.keys() & TS.bodies.keys())
    # ... and read the value types: a literal union, a nested record, an array of them.
    card = TS.fields("ChatCard")
    assert card["status"] == PYTHON["ChatCard"]["status"] == (False, frozenset(
        ("lit", s) for s in ("waiting", "running", "done", "error", "rejected", "cancelled")))
    assert card["subagent"] == (True, frozenset({("ref", "SubagentPart")}))
    assert PYTHON["ChatItem"]["cards"] == (True, frozenset(
        {("arr", frozenset({("ref", "ChatCard")}))}))


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_every_python_wire_type_has_its_ts_twin_with_the_same_fields(name: str) -> None:
    if name in PYTHON_ONLY:
        pytest.skip(PYTHON_ONLY[name])
    twin = TWINS.get(name, name)
    if name in REPLIES:
        # In one of the two only: optional; `ok` is `true` in one, `false` in the other.
        both = [PYTHON[reply] for reply in REPLIES]
        python = {f: (not all(f in r for r in both),
                      frozenset().union(*(r[f][1] for r in both if f in r)))
                  for r in both for f in r}
        twin = "Reply"
    else:
        python = PYTHON[name]
    assert twin in TS.bodies or twin in TS.aliases, f"{name} has no `interface {twin}` in js/src"
    ts = TS.fields(twin)
    assert sorted(python) == sorted(ts), (
        f"{name}: only in Python {sorted(set(python) - set(ts))}, "
        f"only in TS {sorted(set(ts) - set(python))}")
    differ = {field: (python[field][0], ts[field][0]) for field in python
              if python[field][0] != ts[field][0]}
    assert not differ, f"{name}: optional (Python, TS) differs for {differ}"
    for (owner, field), record in NULL_FOR_EMPTY.items():
        if owner == name:
            assert python[field][1] == {("ref", record)}, python[field]
            assert ts[field][1] == {("ref", record), ("null",)}, (
                f"{name}.{field} is no longer `{record} | null` in TS: update NULL_FOR_EMPTY")
    retyped = {field: f"Python {show(python[field][1])} / TS {show(ts[field][1])}"
               for field in python
               if python[field][1] != ts[field][1] and ts[field][1] != {("param",)}
               and (name, field) not in NULL_FOR_EMPTY}
    for (owner, field), _where in OPEN_RECORDS.items():
        if owner == name:
            assert python[field][1] == {("map", frozenset({("any",)}))}, python[field]
            assert show(ts[field][1]) == "{ ...?: unknown; type: string }", ts[field]
            retyped.pop(field, None)
    assert not retyped, f"{name}: the value types differ: {retyped}"


@pytest.mark.parametrize("name", sorted(DUMPS))
def test_a_dumped_model_has_the_fields_of_its_typed_dict(name: str) -> None:
    model = DUMPS[name]
    reached: dict[str, type] = {}
    dumped = {field: py_type(info.annotation, reached)
              for field, info in model.model_fields.items()}
    typed = {field: value for field, (optional, value) in PYTHON[name].items()
             if not (optional and field not in dumped)}  # added by the widgets: optional
    assert typed == dumped, (
        f"{name} differs from {model.__qualname__}: "
        + ", ".join(f"{f}: TypedDict {show(typed[f]) if f in typed else '-'} / model "
                    f"{show(dumped[f]) if f in dumped else '-'}"
                    for f in sorted(typed.keys() | dumped.keys())
                    if typed.get(f) != dumped.get(f)))
