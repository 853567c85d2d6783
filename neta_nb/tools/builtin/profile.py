"""``profile_table``: a skill that profiles a CSV file column by column.

It is the built-in example of a *skill* (seed 000): it reports real progress — one step
per column — which the skill card shows as it happens, and returns a markdown report.
Without a path it profiles the small sample table shipped with the package, so a fresh
notebook has something to try.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path

from ..base import ToolContext, tool
from .workspace import display_path, resolve_inside

__all__ = ["MAX_PROFILE_ROWS", "SAMPLE_TABLE", "ColumnProfile", "profile_columns",
           "profile_table", "sample_table_text"]

MAX_PROFILE_ROWS = 200_000
MAX_REPORTED_COLUMNS = 200
"""Columns the report describes one by one; the rest are counted by type."""
_PROGRESS_STEPS = 100  # progress events per run at most, however many columns
SAMPLE_TABLE = "sample_sales.csv"
_TOP_VALUES = 3
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "-"})


def sample_table_text() -> str:
    """The sample CSV shipped inside the package."""
    return (resources.files("neta_nb.tools") / "data" / SAMPLE_TABLE).read_text("utf-8")


@dataclass
class ColumnProfile:
    name: str
    kind: str = "text"
    """integer, number, date, boolean or text."""
    count: int = 0
    missing: int = 0
    unique: int = 0
    minimum: str | None = None
    maximum: str | None = None
    mean: float | None = None
    top: list[tuple[str, int]] = field(default_factory=list)


@tool(visibility="skill", category="skill", core=True, label="Profile table")
def profile_table(ctx: ToolContext, path: str | None = None) -> str:
    """Profile a CSV table column by column: type, count, missing, unique values,
    min/max/mean for numbers and the most common values for text. Returns a markdown
    report.

    Args:
        path: CSV file relative to the working directory. Omit it to profile the sample
            sales table that ships with neta_nb.
    """
    if path is None:
        title = f"`{SAMPLE_TABLE}` (sample data)"
        text = sample_table_text()
    else:
        target = resolve_inside(ctx.working_dir, path)
        shown = display_path(ctx.working_dir, target)
        if not target.is_file():
            raise FileNotFoundError(f"'{shown}' is not a file in the working directory")
        title = f"`{shown}`"
        text = Path(target).read_text("utf-8", errors="replace")
    ctx.progress(0, "Reading table", title.replace("`", ""))
    header, rows, cut = _read_csv(text)
    profiles: list[ColumnProfile] = []
    every = max(1, -(-len(header) // _PROGRESS_STEPS))  # a report each `every` columns
    for index, name in enumerate(header):
        values = [row[index] if index < len(row) else "" for row in rows]
        profile = _profile_column(name, values)
        profiles.append(profile)
        if (index + 1) % every == 0 or index + 1 == len(header):
            ctx.progress(100 * (index + 1) / len(header),
                         f"Column {index + 1}/{len(header)}: {name}",
                         f"{profile.kind}, {profile.missing} missing, "
                         f"{profile.unique} unique")
    return _report(title, len(rows), profiles, cut)


def profile_columns(text: str) -> list[ColumnProfile]:
    """Profiles of every column of CSV ``text`` (the report's data, without markdown)."""
    header, rows, _ = _read_csv(text)
    return [_profile_column(name, [row[i] if i < len(row) else "" for row in rows])
            for i, name in enumerate(header)]


def _read_csv(text: str) -> tuple[list[str], list[list[str]], bool]:
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(
            sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    header = next(reader, None)
    if not header:
        raise ValueError("the table is empty: no header row")
    header = [name.strip() or f"column_{i + 1}" for i, name in enumerate(header)]
    rows: list[list[str]] = []
    cut = False
    for row in reader:
        if not row:
            continue
        if len(rows) >= MAX_PROFILE_ROWS:
            cut = True
            break
        rows.append(row)
    return header, rows, cut


def _profile_column(name: str, raw: list[str]) -> ColumnProfile:
    present = [value.strip() for value in raw if value.strip().lower() not in _MISSING]
    profile = ColumnProfile(name=name, count=len(present), missing=len(raw) - len(present),
                            unique=len(set(present)))
    if not present:
        return profile
    numbers = _as_numbers(present)
    if numbers is not None:
        profile.kind = "integer" if all(v.is_integer() for v in numbers) and all(
            "." not in v and "e" not in v.lower() for v in present) else "number"
        profile.minimum = _number_text(min(numbers))
        profile.maximum = _number_text(max(numbers))
        profile.mean = math.fsum(numbers) / len(numbers)
        return profile
    dates = _as_dates(present)
    if dates is not None:
        profile.kind = "date"
        profile.minimum = min(dates).isoformat()
        profile.maximum = max(dates).isoformat()
        return profile
    if {value.lower() for value in present} <= {"true", "false", "yes", "no"}:
        profile.kind = "boolean"
    profile.top = Counter(present).most_common(_TOP_VALUES)
    return profile


def _as_numbers(values: list[str]) -> list[float] | None:
    numbers: list[float] = []
    for value in values:
        if "_" in value:  # float() accepts "1_000"; in a table it is text
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
        numbers.append(number)
    return numbers


def _as_dates(values: list[str]) -> list[date] | None:
    try:
        return [date.fromisoformat(value) for value in values]
    except ValueError:
        return None


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _report(title: str, row_count: int, profiles: list[ColumnProfile], cut: bool) -> str:
    lines = [f"## Profile of {title}", "",
             f"{row_count:,} rows × {len(profiles)} columns"
             + (f" (only the first {MAX_PROFILE_ROWS:,} rows were read)" if cut else ""), "",
             "| column | type | count | missing | unique | min | max | mean | top values |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for p in profiles[:MAX_REPORTED_COLUMNS]:
        mean = "" if p.mean is None else f"{p.mean:.4g}"
        top = ", ".join(f"{_cell(value)} ({count})" for value, count in p.top)
        lines.append(f"| {_cell(p.name)} | {p.kind} | {p.count} | {p.missing} | {p.unique} "
                     f"| {p.minimum or ''} | {p.maximum or ''} | {mean} | {top} |")
    rest = profiles[MAX_REPORTED_COLUMNS:]
    if rest:
        kinds = Counter(p.kind for p in rest)
        lines += ["", f"…and {len(rest):,} more columns, not listed one by one: "
                  + ", ".join(f"{count:,} {kind}" for kind, count in kinds.most_common())
                  + ". Profile a smaller selection of columns to see them."]
    incomplete = [p.name for p in profiles if p.missing]
    shown = ", ".join(_cell(name) for name in incomplete[:MAX_REPORTED_COLUMNS])
    if len(incomplete) > MAX_REPORTED_COLUMNS:
        shown += f" and {len(incomplete) - MAX_REPORTED_COLUMNS:,} more"
    lines += ["", f"Columns with missing values: {shown}." if incomplete
              else "No column has missing values."]
    return "\n".join(lines)
