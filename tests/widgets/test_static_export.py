"""Outside a live kernel: an executed notebook exported by nbconvert shows each card's
content from its static form, an output of its own next to the widget view."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter, MarkdownExporter

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

CELLS = [
    "from neta_nb.widgets import SkillCard, TodoCard, TokenStats, ToolCard",
    "TodoCard(todos=[{'id': '1', 'content': 'Load <data>', 'status': 'completed'},"
    " {'id': '2', 'content': 'Fit the model', 'status': 'in_progress'}])",
    "ToolCard(name='search', label='Web search', status='done', args={'q': 'x'},"
    " result='3 hits')",
    "SkillCard(name='report', label='Report', status='done', result='Saved report.pdf')",
    "TokenStats({'current': {'input_tokens': 1234, 'output_tokens': 340, 'total_tokens': 1574,"
    " 'api_calls': 3}, 'context': {'used_tokens': 64000, 'max_tokens': 200000,"
    " 'percent': 32}}, running=True)",
]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    # JupyterLab does not save widget state by default, and GitHub never renders it: the
    # exported notebook then has only the static fallbacks to show.
    NotebookClient(notebook, kernel_name="python3", timeout=120,
                   store_widget_state=False).execute()
    return notebook


def test_each_widget_makes_a_view_and_one_static_form(executed: nbformat.NotebookNode
                                                        ) -> None:
    for cell in executed.cells[1:]:
        view, form = cell.outputs
        assert set(view.data) == {WIDGET_VIEW, "text/plain"}
        assert view.data["text/plain"] == ""  # the form below carries the words, once
        # One rich form and a short text: the content is not written three times.
        assert set(form.data) == {"text/html", "text/plain"}
        assert len(form.data["text/plain"]) <= 401
    assert executed.cells[1].outputs[1].data["text/plain"] == (
        "Plan · 1/2 done\n[x] Load <data>\n[>] Fit the model (In progress)")


def test_html_export_shows_the_cards(executed: nbformat.NotebookNode) -> None:
    html, _ = HTMLExporter().from_notebook_node(executed)
    assert "Plan · 1/2 done" in html
    assert "Load &lt;data&gt;" in html
    assert "Web search · Done" in html
    assert "Report · Done" in html
    assert "↑1.2K ↓340 · 3 calls | Context 32%" in html


def test_markdown_export_shows_the_cards(executed: nbformat.NotebookNode) -> None:
    # nbconvert's markdown export embeds the HTML form (it ranks text/html first).
    markdown, _ = MarkdownExporter().from_notebook_node(executed)
    assert "Plan · 1/2 done" in markdown
    assert "Fit the model (In progress)" in markdown
    assert "3 hits" in markdown
    assert "Load &lt;data&gt;" in markdown
