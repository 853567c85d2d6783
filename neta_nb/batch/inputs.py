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
    """Refuse, before anything runs, a template that names a column the inputs lack."""
    if template is None:
        return
    fields = [field for _, field, _, _ in string.Formatter().parse(template)
              if field is not None]
    if "" in fields:
        raise ValueError("the prompt has an empty '{}': name the column to fill in, e.g. "
                         "'{body}' (write '{{' and '}}' for literal braces)")
    names = {field.split(".")[0].split("[")[0] for field in fields}
    missing = sorted(name for name in names if name not in columns)
    if missing:
        raise ValueError(f"the prompt names {', '.join(repr(m) for m in missing)}, which the "
                         f"inputs do not have (columns: {', '.join(columns)})")


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
    """``{0}`` names the column ``"0"`` (a DataFrame's default column names), not a
    positional argument: every field is a column."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return kwargs[str(key)]


_FORMATTER = _ColumnFormatter()


def _is_dataframe(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "to_dict")


def _plain(value: Any) -> Any:
    """A JSON-safe form of a cell."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return _plain(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)
