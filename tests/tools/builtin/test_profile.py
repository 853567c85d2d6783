"""profile_table: a skill with real per-column progress and a markdown report."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import profile_table
from neta_nb.tools.builtin.profile import profile_columns, sample_table_text
from neta_nb.tools.builtin.workspace import OutsideWorkingDirError

Report = list[tuple[float, str | None, str | None]]


def context(working_dir: Path, reports: Report) -> ToolContext:
    return ToolContext(working_dir=working_dir,
                       on_progress=lambda p, s, d: reports.append((p, s, d)))


async def test_profiles_a_csv_with_progress_per_column(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(
        "name,age,score,joined\nAda,36,9.5,2024-01-02\nBob,,7,2024-03-04\nAda,41,8,\n")
    reports: Report = []
    text = await profile_table.invoke({"path": "t.csv"}, context(tmp_path, reports))
    assert reports == [
        (0.0, "Reading table", "t.csv"),
        (25.0, "Column 1/4: name", "text, 0 missing, 2 unique"),
        (50.0, "Column 2/4: age", "integer, 1 missing, 2 unique"),
        (75.0, "Column 3/4: score", "number, 0 missing, 3 unique"),
        (100.0, "Column 4/4: joined", "date, 1 missing, 2 unique"),
    ]
    assert text.splitlines() == [
        "## Profile of `t.csv`",
        "",
        "3 rows × 4 columns",
        "",
        "| column | type | count | missing | unique | min | max | mean | top values |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
        "| name | text | 3 | 0 | 2 |  |  |  | Ada (2), Bob (1) |",
        "| age | integer | 2 | 1 | 2 | 36 | 41 | 38.5 |  |",
        "| score | number | 3 | 0 | 3 | 7 | 9.5 | 8.167 |  |",
        "| joined | date | 2 | 1 | 2 | 2024-01-02 | 2024-03-04 |  |  |",
        "",
        "Columns with missing values: age, joined.",
    ]


async def test_without_a_path_profiles_the_shipped_sample(tmp_path: Path) -> None:
    reports: Report = []
    text = await profile_table.invoke({}, context(tmp_path, reports))
    assert text.startswith("## Profile of `sample_sales.csv` (sample data)\n\n40 rows × 8 "
                           "columns")
    assert [r[1] for r in reports][1:] == [
        "Column 1/8: order_id", "Column 2/8: order_date", "Column 3/8: region",
        "Column 4/8: product", "Column 5/8: units", "Column 6/8: unit_price",
        "Column 7/8: revenue", "Column 8/8: customer_rating"]
    kinds = {p.name: p.kind for p in profile_columns(sample_table_text())}
    assert kinds == {"order_id": "integer", "order_date": "date", "region": "text",
                     "product": "text", "units": "integer", "unit_price": "number",
                     "revenue": "number", "customer_rating": "integer"}


async def test_semicolon_files_and_odd_values(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("a;b;c\n1_000;yes;x|y\n2;no;\n")
    text = await profile_table.invoke({"path": "s.csv"}, ToolContext(working_dir=tmp_path))
    assert "| a | text | 2 | 0 | 2 |" in text
    assert "| b | boolean | 2 | 0 | 2 |" in text
    assert "x\\|y (1)" in text


async def test_refuses_paths_outside_and_missing_files(tmp_path: Path) -> None:
    ctx = ToolContext(working_dir=tmp_path / "inner")
    (tmp_path / "inner").mkdir()
    (tmp_path / "outside.csv").write_text("a\n1\n")
    with pytest.raises(OutsideWorkingDirError):
        await profile_table.invoke({"path": "../outside.csv"}, ctx)
    with pytest.raises(FileNotFoundError, match="not a file"):
        await profile_table.invoke({"path": "nope.csv"}, ctx)


async def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ValueError, match="the table is empty"):
        await profile_table.invoke({"path": "e.csv"}, ToolContext(working_dir=tmp_path))


def test_metadata() -> None:
    assert profile_table.visibility == "skill"
    assert profile_table.category == "skill"
    assert profile_table.label == "Profile table"
    assert profile_table.description.startswith(
        "Profile a CSV table column by column: type, count, missing, unique values, "
        "min/max/mean for numbers and the most common values for text.")


def test_the_wheel_carries_the_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    # The widgets' JS is not what this is about: a built one is reused (built anew when
    # there is none), which saves the npm build's quarter of a minute.
    monkeypatch.setenv("NETA_NB_SKIP_JS", "1")
    root = Path(__file__).resolve().parents[3]
    builder = hatchling.WheelBuilder(str(root))
    wheel = next(iter(builder.build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as archive:
        assert "neta_nb/tools/data/sample_sales.csv" in archive.namelist()
