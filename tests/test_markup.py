"""plain_text: what markdown reads as, parsed (never stripped character by character)."""

from __future__ import annotations

import pytest

from neta_nb.markup import plain_text


@pytest.mark.parametrize(("markdown", "plain"), [
    ("Profiled `sample_sales.csv`.", "Profiled sample_sales.csv."),
    ("snake_case_name and 3 * 4 * 5", "snake_case_name and 3 * 4 * 5"),
    ("# Hello\n\n**there**", "Hello\nthere"),
    ("A [link](https://example.invalid) and ![a chart](c.png)", "A link and a chart"),
    ("<b>raw</b> &amp; ~~old~~ new", "raw & old new"),
    ("- `region`: 2 missing\n- done", "• region: 2 missing\n• done"),
    ("3. three\n4. four", "3. three\n4. four"),
    ("| check | result |\n|---|---|\n| files | ✓ |", "check result\nfiles ✓"),
    ("```python\nx = 1\n\ny = 2\n```", "x = 1\ny = 2"),
    ("> quoted\n> on two lines", "quoted on two lines"),
    ("", ""),
])
def test_plain_text(markdown: str, plain: str) -> None:
    assert plain_text(markdown) == plain
