"""A saved notebook shows the conversation as it ended, without a kernel (issue 17).

* In JupyterLab with its default settings (no widget state saved), a chat notebook is run,
  saved, closed and reopened without its kernel: its static form — kept current at each turn's
  end — shows the final answer, the plan and the tool cards; while the live view was on the
  page the form was not shown beside it; the ``.ipynb`` stays under twice the transcript
  plus a few KB.
* ``jupyter nbconvert --execute --to html`` of the quickstart, opened in Chromium from
  ``file://`` with the network closed (so the export's widget manager, which loads from
  the web, cannot run): the page shows the final answer, the plan and the cards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest

from neta_nb.escaping import plain_text

from . import chat_cells
from .harness import LabSession

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

CHAT = """
provider = ScriptedProvider(chars_per_second=4000)
session = AgentSession(Agent("analyst", model=provider), working_dir={data!r})
chat = ChatView(session, height="480px")
chat
""".strip()
RUN = 'await session.run("Profile the sample sales data and tell me what stands out.")'


def _static_forms(page: Page) -> Locator:
    return page.locator(".jp-OutputArea-child:has(.neta-static-form)")


def test_a_saved_chat_reopens_without_a_kernel_showing_how_it_ended(
        lab: LabSession, screenshot_dir: Path) -> None:
    data = str(ROOT / "notebooks" / "data")
    path = lab.run_notebook("saved_chat.ipynb",
                            [chat_cells.IMPORTS, CHAT.format(data=data), RUN], timeout=120)
    page = lab.page
    live = page.locator(".neta-chat-view")
    live.locator(".neta-tool-card").first.wait_for()
    transcript = json.loads(lab.execute(path, (
        "import json; print(json.dumps([m.text for m in session.messages "
        "if m.role in ('user', 'assistant')]))")))
    final = transcript[-1]
    assert len(final) > 200
    # Live: the view shows, and its static form (the next output) does not.
    forms = _static_forms(page)
    assert forms.count() == 1
    assert forms.first.is_hidden()
    lab.wait_for_transitions()
    lab.screenshot(live, screenshot_dir / "saved-chat-live.png")

    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    file = lab.server.root_dir / path
    saved = nbformat.read(file, as_version=4)
    assert WIDGET_STATE not in saved.metadata.get("widgets", {})  # JupyterLab's default
    html = next(output.data["text/html"] for output in saved.cells[1].outputs
                if "text/html" in output.get("data", {}))
    # The answer's markdown is drawn: its words are there, its markup is not.
    heading = plain_text(final).splitlines()[0][:60]
    assert heading in html.replace("&#x27;", "'").replace("&quot;", '"')
    assert final.split("\n")[0].startswith("#") and "<h2>" in html
    text_bytes = sum(len(t.encode()) for t in transcript)
    assert file.stat().st_size < 2 * text_bytes + 16 * 1024, (file.stat().st_size, text_bytes)

    # Closed (its kernel shut down) and reopened, as days later: the kernel it gets holds
    # none of its widgets, and no widget state was saved. In a tab of its own: JupyterLab
    # logs an error there for the view it cannot draw, which is the expected outcome.
    lab.close_all()
    server = lab.server  # a workspace of its own: JupyterLab moves a second tab off the first
    later = LabSession(server, page.context,
                       url=f"{server.url}/lab/workspaces/reopened?token={server.token}")
    try:
        later.open_notebook(path)
        form = _static_forms(later.page).first
        form.wait_for(timeout=30_000)
        assert later.page.locator(".neta-chat-view").count() == 0  # no widgets to render
        answer = form.locator(".neta-static-assistant").last.text_content()
        assert answer is not None
        assert " ".join(answer.split()).endswith(" ".join(plain_text(final).split())[-60:])
        assert "Plan · 3/3 done" in (form.text_content() or "")
        cards = form.locator(".neta-static-card")
        assert cards.count() >= 2
        assert "List files · Done" in (cards.first.text_content() or "")
        # The profile's table is drawn as a table, as on the live card, not as pipes.
        assert form.locator(".neta-static-card table").count() >= 1
        assert "|---" not in (form.text_content() or "")
        for dark in (False, True):
            later.set_theme(dark=dark)
            theme = "dark" if dark else "light"
            later.screenshot(form, screenshot_dir / f"saved-chat-reopened-{theme}.png")
        later.set_theme(dark=False)
        later.close_all()
    finally:
        later.close()


def test_an_executed_export_shows_the_conversation_offline(tmp_path: Path, lab: LabSession,
                                                           screenshot_dir: Path) -> None:
    shutil.copytree(ROOT / "notebooks" / "data", tmp_path / "data")
    shutil.copy(ROOT / "notebooks" / "01_quickstart.ipynb", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "html",
                    "01_quickstart.ipynb"], cwd=tmp_path, env=env, check=True, timeout=300,
                   capture_output=True)
    exported = tmp_path / "01_quickstart.html"
    text = exported.read_text()
    # The widget state is in the export, with the code once and the conversation.
    state = json.loads(text.split(f'<script type="{WIDGET_STATE}">')[1].split("</script>")[0])
    models = list(state["state"].values())
    # (gzip-compressed, a binary buffer: base64 in the saved state)
    assert sum(1 for m in models for b in m.get("buffers", []) if b["path"] == ["code"]) == 1
    (chat,) = [m for m in models if m["state"].get("_component") == "chat-view"]
    roles = [m["role"] for m in chat["state"]["messages"]]
    assert roles[0] == "user" and roles.count("assistant") >= 3

    page = lab.page.context.new_page()
    try:
        page.goto(exported.as_uri())
        form = page.locator(".neta-static-chat")
        form.wait_for()
        answer = form.locator(".neta-static-assistant").last
        assert "sales.csv" in (form.text_content() or "")
        assert "Plan · 3/3 done" in (form.text_content() or "")
        assert form.locator(".neta-static-card").count() >= 2
        assert (answer.text_content() or "").strip()
        # The cards' own static forms too (the quickstart's TodoCard).
        assert page.locator(".neta-static-form").count() == 2
        page.set_viewport_size({"width": 1000, "height": 1400})
        form.screenshot(path=str(screenshot_dir / "export-offline-chat.png"))
    finally:
        page.close()
