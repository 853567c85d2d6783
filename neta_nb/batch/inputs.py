"""What a batch run reads and writes per row: its inputs (a DataFrame's rows, strings or
dicts) as the values a prompt template is filled with, and the answer parsed into an
output model's fields.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["BatchInputs", "OutputError", "parse_output", "render_prompt"]

INPUT_COLUMN = "input"
"""The column a list of strings is given under (``{input}`` in a template)."""
MAX_FORMAT_NUMBER = 10_000
"""The largest width or precision a template's format spec may ask for (``{body:.2000}``
cuts a text to 2,000 characters; a width of a billion would allocate a gigabyte a row)."""
_SPEC_NUMBER = re.compile(r"\d+")


class BatchInputs:
    """The rows of a run: ``columns`` in order and one ``dict`` per row of JSON-safe
    values (a DataFrame's NaN becomes ``None``, timestamps their ISO text)."""

    def __init__(self, columns: list[str], rows: list[dict[str, Any]]) -> None:
        self.columns = columns
        self.rows = rows

    @classmethod
    def of(cls, inputs: Any) -> BatchInputs:
        if _is_dataframe(inputs):
            columns = [str(column) for column in inputs.columns]
            if len(set(columns)) != len(columns):
                raise ValueError("the DataFrame's column names must be unique")
            records = inputs.to_dict(orient="records")
            return cls(columns, [{str(k): _plain(v) for k, v in row.items()} for row in records])
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise TypeError("inputs must be a pandas DataFrame, a list of strings or a list "
                            f"of dicts, not {type(inputs).__name__}")
        items = list(inputs)
        if all(isinstance(item, str) for item in items):
            return cls([INPUT_COLUMN], [{INPUT_COLUMN: item} for item in items])
        if all(isinstance(item, Mapping) for item in items):
            names: list[str] = []
            for item in items:
                names += [str(k) for k in item if str(k) not in names]
            return cls(names, [{str(k): _plain(v) for k, v in item.items()} for item in items])
        raise TypeError("inputs must be all strings or all dicts (a DataFrame works too)")


def render_prompt(template: str | None, row: Mapping[str, Any]) -> str:
    """The prompt for ``row``: ``template`` with ``{column}`` filled in; without one the
    row's only value (a list of strings), else its JSON."""
    if template is None:
        if list(row) == [INPUT_COLUMN]:
            return str(row[INPUT_COLUMN])
        return json.dumps(dict(row), ensure_ascii=False, default=str)
    return _FORMATTER.vformat(template, (), _Strict(row))


def check_template(template: str | None, columns: list[str]) -> None:
    """Refuse, before anything runs, a template that cannot work: a field that is not one
    of the inputs' columns (attribute or index access included: ``{body.__class__}``,
    ``{body[0]}``), an empty ``{}``, a conversion other than ``!r``, ``!s`` or ``!a``, or
    a format spec whose width or precision is over :data:`MAX_FORMAT_NUMBER`."""
    if template is None:
        return
    try:
        _check_fields(template, columns, nested=False)
    except ValueError as exc:  # also the template's own syntax: "Single '}' ..."
        raise ValueError(f"the prompt cannot be filled: {exc}") from None


def _check_fields(text: str, columns: list[str], *, nested: bool) -> None:
    for literal, field, spec, conversion in _FORMATTER.parse(text):
        if nested:  # a spec's own text around its field: ">{w}" or ".{digits}f"
            check_format_spec(literal)
        if field is None:
            continue
        if field == "":
            raise ValueError("it has an empty '{}': name the column to fill in, e.g. "
                             "'{body}' (write '{{' and '}}' for literal braces)")
        if field not in columns:
            if "." in field or "[" in field:
                raise ValueError(
                    f"{{{field}}} is not a column: a field is a column's whole name, with "
                    f"no attribute or index access ('.' or '[…]' after a column's name); "
                    f"columns: {', '.join(columns)}")
            raise ValueError(f"it names {field!r}, which the inputs do not have "
                             f"(columns: {', '.join(columns)})")
        if conversion not in (None, "r", "s", "a"):
            raise ValueError(f"{{{field}!{conversion}}} asks for the conversion "
                             f"'!{conversion}': only '!r', '!s' and '!a' exist")
        if spec and "{" in spec:
            if nested:
                raise ValueError(f"the format spec {spec!r} is inside another field's "
                                 f"format spec: one level of '{{column}}' in a spec at most")
            _check_fields(spec, columns, nested=True)
        elif spec:
            check_format_spec(spec)


def check_format_spec(spec: str) -> None:
    """Refuse a format spec whose width or precision is over :data:`MAX_FORMAT_NUMBER`:
    ``{body:>999999999}`` would pad every prompt to a gigabyte."""
    for number in _SPEC_NUMBER.findall(spec):
        if int(number) > MAX_FORMAT_NUMBER:
            raise ValueError(f"the format spec {spec!r} asks for a width or precision of "
                             f"{int(number):,}; at most {MAX_FORMAT_NUMBER:,} is allowed")


class OutputError(ValueError):
    """An answer that does not hold the output model's fields."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_output(answer: str, model: type[BaseModel]) -> BaseModel:
    """``answer`` as ``model``: its JSON object (in a code fence or bare, the first ``{``
    to the last ``}``)."""
    fenced = _FENCE.search(answer)
    text = fenced.group(1) if fenced else answer
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise OutputError(f"the answer holds no JSON object for {model.__name__}")
    try:
        return model.model_validate_json(text[start:end + 1])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the object"
        raise OutputError(f"the answer is not a {model.__name__}: {where}: "
                          f"{first.get('msg', exc)}") from None


class _Strict(dict[str, Any]):
    def __missing__(self, key: str) -> Any:
        raise KeyError(f"the row has no column {key!r}")


class _ColumnFormatter(string.Formatter):
    """Every field is a column's whole name: ``{0}`` names the column ``"0"`` (a
    DataFrame's default column names), not a positional argument, and ``{a.b}`` the
    column ``"a.b"`` — never an attribute or an item of a value (``{body.__class__}``
    would put Python's internals into the prompt). A format spec taken from a row's value
    (``{price:.{digits}f}``) is held to the same bound as one written in the template."""

    def get_field(self, field_name: str, args: Sequence[Any],
                  kwargs: Mapping[str, Any]) -> tuple[Any, str]:
        return kwargs[field_name], field_name

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_format_spec(format_spec)
        return format(value, format_spec)


_FORMATTER = _ColumnFormatter()


def _is_dataframe(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "to_dict")


def _plain(value: Any) -> Any:
    """A JSON-safe form of a cell: the value a store gives back for it (a tuple is a list,
    a dict's keys are strings), so that a run reads the same inputs in memory, from its
    store and after a resume."""
    if value is None or type(value) in (str, bool, int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else float(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return _plain(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return str(value)
