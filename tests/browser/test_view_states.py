"""What the views show is what the runtime does, and keys typed into them stay there: in real
JupyterLab (and Notebook 7 for the keyboard), light and dark.

* Shift+Enter in the chat box is a new line and runs no cell; Enter sends; Escape stays.
* The level selector is disabled during a turn; after Stop nothing spins anywhere.
* ``await session.compact()`` between turns leaves the view idle.
* A skill's result table at 800 px scrolls inside the card, and no header word breaks.
* Every component's text meets WCAG AA contrast (axe-core's colour model), light and dark.
* Consecutive thinking-only responses of a turn show as one thinking block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import chat_cells, gallery
from .harness import JupyterLabServer, LabSession

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "js" / "node_modules" / "axe-core" / "axe.min.js"
IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"

SCRIPTED_CHAT = """
session = AgentSession(Agent("analyst", model=ScriptedProvider()))
chat = ChatView(session)
chat
""".strip()

# Anything that says "working on it": spinners, streaming blocks and cursors, the working
# dots, a card running or waiting, a busy view. None may be left once a turn has ended.
RUNNING_INDICATORS = """() => [...document.querySelectorAll(
  '.neta-spinner, .neta-is-streaming, .neta-chat-cursor, .neta-thinking-cursor,'
  + ' .neta-chat-view.neta-is-running, [data-status="running"], [data-status="waiting"],'
  + ' .neta-skill-card-running, .neta-tool-card-running')]
  .filter((n) => n.offsetParent !== null || n.classList.contains('neta-is-running'))
  .map((n) => n.className || n.dataset.status)"""

# What the notebook shows and what its kernel has run: the prompts of the code cells, the
# notebook's mode, and the kernel's own execution count (asked after the keys: the kernel
# answers requests in order, so a cell that ran from a key press is counted by then).
NOTEBOOK_STATE = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  const prompts = [...panel.content.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
    .map((n) => n.textContent.trim());
  const kernel = panel.sessionContext.session.kernel;
  const future = kernel.requestExecute({
    code: 'print(get_ipython().execution_count, id(chat))', store_history: false });
  let out = '';
  future.onIOPub = (msg) => { if (msg.header.msg_type === 'stream') out += msg.content.text; };
  await future.done;
  return { prompts, mode: panel.content.mode, kernel: out.trim() };
}"""


def _type_into_the_chat(page: Any) -> None:
    """Shift+Enter, Escape and Enter in the chat box, checking the notebook after each."""
    box = page.locator(".neta-chat-textarea")
    box.click()
    before = page.evaluate(NOTEBOOK_STATE)
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert box.input_value() == "first line\nsecond line"
    page.keyboard.press("Escape")
    after = page.evaluate(NOTEBOOK_STATE)
    # No cell ran (same prompts, same kernel count, the same chat object), the notebook
    # kept its mode, and the text and the focus stayed in the box.
    assert after == before
    assert box.evaluate("(n) => n === document.activeElement")
    assert box.input_value() == "first line\nsecond line"
    page.keyboard.press("Enter")
    page.locator(".neta-chat-user .neta-chat-bubble").wait_for()
    bubble = page.locator(".neta-chat-user .neta-chat-bubble").first.text_content()
    assert bubble == "first line\nsecond line"
    assert box.input_value() == ""
    page.wait_for_function(IDLE, timeout=60_000)
    assert page.evaluate(NOTEBOOK_STATE)["kernel"] == before["kernel"]


def test_shift_enter_is_a_new_line_in_jupyterlab(lab: LabSession) -> None:
    lab.run_notebook("keys_lab.ipynb", [chat_cells.IMPORTS, SCRIPTED_CHAT])
    _type_into_the_chat(lab.page)


def test_shift_enter_is_a_new_line_in_notebook_7(notebook7: JupyterLabServer,
                                                 lab: LabSession) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in (chat_cells.IMPORTS, SCRIPTED_CHAT)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, notebook7.root_dir / "keys_nb7.ipynb")
    # A tab of the session's Chromium (one Playwright per test run), on the other server.
    page = lab.page.context.new_page()
    try:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
        page.goto(f"{notebook7.url}/notebooks/keys_nb7.ipynb?token={notebook7.token}",
                  wait_until="domcontentloaded")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        page.evaluate("""async () => {
          const app = window.jupyterapp;
          await app.started; await app.restored;
          const panel = app.shell.currentWidget;
          await panel.context.ready; await panel.sessionContext.ready;
          await app.commands.execute('notebook:run-all-cells');
        }""")
        page.locator(".neta-chat-textarea").wait_for(timeout=60_000)
        page.wait_for_function("""() => {
          const panel = window.jupyterapp.shell.currentWidget;
          return panel.sessionContext.session?.kernel?.status === 'idle'
            && [...panel.content.model.cells].every((c) => c.executionCount !== null);
        }""", timeout=60_000)
        assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        _type_into_the_chat(page)
        # Notebook 7 on a fresh profile reports one error of its own (a settings schema it
        # looks up, in its notebook_core bundle); only errors from elsewhere are ours.
        assert [e for e in errors if "/static/notebook/" not in e] == []
    finally:
        page.close()


def test_the_selector_waits_for_the_turn_and_stop_leaves_nothing_spinning(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("truth_stop.ipynb", [chat_cells.IMPORTS, chat_cells.GATED_TURN])
    page = lab.page
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    select = page.locator(".neta-chat-view .neta-level-select")
    assert select.is_enabled()
    page.locator(".neta-chat-textarea").fill("Profile the data in this folder")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-skill-card.neta-skill-card-running", has_text="Column 5/8").wait_for()
    assert select.is_disabled()
    assert page.locator(".neta-todo-row-in_progress .neta-spinner").count() == 1
    page.locator(".neta-chat-send.neta-is-stop").click()
    page.wait_for_function(IDLE)
    page.locator(".neta-skill-card.neta-skill-card-cancelled").wait_for()
    page.wait_for_function("() => !document.querySelector('.neta-chat-view .neta-level-select')"
                           ".disabled")
    lab.wait_for_transitions()
    assert page.evaluate(RUNNING_INDICATORS) == []
    # The step the turn was on shows as paused, the card as cancelled, not failed.
    paused = page.locator(".neta-todo-row-in_progress.neta-is-paused")
    assert paused.count() == 1
    assert paused.locator(".neta-todo-tag").text_content() == "Paused"
    card = page.locator(".neta-skill-card.neta-skill-card-cancelled")
    assert card.locator(".neta-skill-tag").text_content() == "Cancelled"
    status = lab.execute(path, "print(session.messages[-2].metadata.skill_executions[0].status"
                               " if session.messages[-2].role == 'assistant' else "
                               "[m.metadata.skill_executions[0].status for m in "
                               "session.messages if m.metadata.skill_executions][0])")
    assert status.strip() == "cancelled"
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".widget-hbox").first,
                       screenshot_dir / f"chat-stopped-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    page.evaluate("() => window.jupyterapp.shell.expandLeft()")


def test_compact_between_turns_leaves_the_view_idle(lab: LabSession) -> None:
    path = lab.run_notebook("truth_compact.ipynb", [chat_cells.IMPORTS, """
session = AgentSession(Agent("analyst", model=ScriptedProvider(), keep_recent_turns=1,
                             compact_at=None))
await session.run("Profile the data")
await session.run("And again")
chat = ChatView(session)
chat
""".strip()])
    page = lab.page
    page.locator(".neta-chat-assistant").first.wait_for()
    lab.execute(path, "event = await session.compact()\nprint(event.messages_folded)")
    page.locator(".neta-chat-compaction").wait_for()
    lab.wait_for_frames()
    assert page.evaluate(IDLE)
    assert page.locator(".neta-chat-working").is_hidden()
    send = page.locator(".neta-chat-send")
    assert send.text_content() == "Send" and "neta-is-stop" not in (send.get_attribute("class")
                                                                   or "")
    assert lab.execute(path, "print(chat.running)").strip() == "False"
    # Send works: a turn runs and ends.
    page.locator(".neta-chat-textarea").fill("Third time")
    send.click()
    # The unpaced demo model may finish before a poll sees the view busy: wait for the turn.
    page.locator(".neta-chat-bubble", has_text="Third time").wait_for()
    lab.wait_for_kernel_value(path, "session.messages[-1].role == 'assistant' and "
                                    "not session.running", "True", timeout=60)
    page.wait_for_function(IDLE, timeout=60_000)
    assert page.evaluate(RUNNING_INDICATORS) == []


WIDE_TABLE = """
header = ["column", "type", "count", "missing", "unique", "mean", "minimum", "maximum",
          "deviation", "skewness"]
rows = [["order_date", "date", "40", "0", "40", "—", "2024-01-02", "2024-03-29", "—", "—"],
        ["customer_rating", "float", "27", "13", "5", "3.9", "1.0", "5.0", "1.1", "-0.7"]]
table = "\\n".join(["| " + " | ".join(r) + " |" for r in [header, ["---"] * len(header), *rows]])
skill = SkillCard(name="profile", label="Profile table", status="done", percent=100,
                  expanded=True, result="## Profile of `sales.csv`\\n\\n" + table)
skill
""".strip()

# Every word of every header cell sits on one line: a word broken across lines has a text
# range with two boxes. Also reports the table's and the card's own overflow.
HEADER_WORDS = """() => {
  const table = document.querySelector('.neta-skill-card .neta-markdown table');
  const broken = [];
  for (const th of table.querySelectorAll('th')) {
    const node = th.firstChild;
    const text = node.textContent;
    let start = 0;
    for (const word of text.split(/\\s+/)) {
      const at = text.indexOf(word, start);
      start = at + word.length;
      if (!word) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + word.length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1 || range.getBoundingClientRect().width > th.clientWidth) {
        broken.push(word);
      }
    }
  }
  const card = document.querySelector('.neta-skill-card');
  return { broken, headers: table.querySelectorAll('th').length,
           scrolls: table.scrollWidth > table.clientWidth,
           overflow: getComputedStyle(table).overflowX,
           cardOverflows: card.scrollWidth > card.clientWidth + 1 };
}"""


def test_a_wide_skill_table_at_800_px_scrolls_and_breaks_no_header(
        lab: LabSession, screenshot_dir: Path) -> None:
    lab.set_viewport_size({"width": 800, "height": 900})
    try:
        lab.run_notebook("truth_table.ipynb", [gallery.SETUP, WIDE_TABLE])
        page = lab.page
        page.locator(".neta-skill-card .neta-markdown table th").first.wait_for()
        lab.wait_for_transitions()
        measured = page.evaluate(HEADER_WORDS)
        assert measured["headers"] == 10
        assert measured["broken"] == []
        assert measured["scrolls"] and measured["overflow"] == "auto"
        assert not measured["cardOverflows"]
        output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.screenshot(output, screenshot_dir /
                           f"skill-card-table-800px-{'dark' if dark else 'light'}.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_viewport_size({"width": 1400, "height": 900})


PANEL_AND_CHATS = [
    chat_cells.IMPORTS,
    """
from neta_nb.widgets import ToolConfigPanel
from neta_nb.providers import create_provider
panel_session = AgentSession(Agent("analyst", model="scripted",
                                   tools=AgentToolConfig(enabled=["describe_image"])),
                             ToolCatalog.demo(),
                             provider=create_provider("openai:o3-mini", api_key="sk-unused"))
panel = ToolConfigPanel.for_session(panel_session)
panel
""".strip(),
    chat_cells.SIDEBAR,
    chat_cells.APPROVAL,
    "CPS = 40\n" + chat_cells.RECORDING_DEMO,
]

# WCAG AA contrast of every piece of text in every component: 4.5:1, or 3:1 for large text,
# computed with axe-core's colour model (its Color, flattenColors and getContrast). axe's
# own `color-contrast` rule skips nearly all text inside JupyterLab (the shell sits in a
# zero-height `overflow: hidden` container, which its visibility and background-stack
# tests take for a clip), so the text and its backdrop are found here: visible text, not
# disabled (inactive controls are exempt), its colour and opacity, and the background
# colours of its ancestors blended up to the first opaque one. A canvas turns any CSS
# colour (color-mix results included) into RGBA.
AXE_CONTRAST = """async () => {
  const { Color, flattenColors, getContrast } = axe.commons.color;
  const canvas = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
  const rgba = (css) => {
    canvas.clearRect(0, 0, 1, 1);
    canvas.fillStyle = '#000';
    canvas.fillStyle = css;
    canvas.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = canvas.getImageData(0, 0, 1, 1).data;
    return new Color(r, g, b, a / 255);
  };
  const roots = [...document.querySelectorAll('.neta-root')]
    .filter((n) => !n.parentElement.closest('.neta-root'));
  const hasText = (el) => [...el.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
  // Shown: rendered, not transparent, and not clipped away inside its component (a folded
  // section). Outside the component, JupyterLab's own containers do not clip.
  const shown = (el, root) => {
    if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return false;
    const box = el.getBoundingClientRect();
    if (box.width < 1 || box.height < 1) return false;
    for (let n = el.parentElement; n && n !== root.parentElement; n = n.parentElement) {
      if (getComputedStyle(n).overflow === 'visible') continue;
      const clip = n.getBoundingClientRect();  // a folded section clips its content away
      if (clip.height < 1 || clip.width < 1 || box.bottom <= clip.top || box.top >= clip.bottom)
        return false;
    }
    return true;
  };
  // The colour behind `el`: its own and its ancestors' backgrounds, nearest on top.
  const backdrop = (el) => {
    const layers = [];
    for (let n = el; n; n = n.parentElement) {
      const style = getComputedStyle(n);
      if (style.backgroundImage !== 'none' && !n.matches('.jp-ThemedContainer, body, html'))
        return null;  // a gradient or an image: not measurable this way
      const color = rgba(style.backgroundColor);
      if (color.alpha > 0) layers.push(color);
      if (color.alpha >= 1) break;
    }
    let bg = new Color(255, 255, 255, 1);
    for (const layer of layers.reverse()) bg = flattenColors(layer, bg);
    return bg;
  };
  const violations = [];
  const undecided = [];
  let checked = 0;
  for (const root of roots) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (!hasText(el) || el.closest(':disabled, .neta-is-disabled') || !shown(el, root)) continue;
      const text = el.textContent.trim().slice(0, 40);
      const bg = backdrop(el);
      if (!bg) {
        undecided.push(`${el.className} "${text}"`);
        continue;
      }
      let opacity = 1;
      for (let n = el; n; n = n.parentElement) opacity *= parseFloat(getComputedStyle(n).opacity);
      const style = getComputedStyle(el);
      const own = rgba(style.color);
      const fg = flattenColors(new Color(own.red, own.green, own.blue, own.alpha * opacity), bg);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (parseInt(style.fontWeight, 10) >= 700 && size >= 18.66);
      const needed = large ? 3 : 4.5;
      const ratio = getContrast(bg, fg);
      checked += 1;
      if (ratio < needed - 0.005) {
        violations.push(`${el.localName}.${[...el.classList].join('.')} "${text}": `
          + `${ratio.toFixed(2)} < ${needed} (${fg.toHexString()} on ${bg.toHexString()})`);
      }
    }
  }
  return { roots: roots.length, violations, checked, undecided };
}"""


def _contrast_violations(lab: LabSession) -> list[str]:
    page = lab.page
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    lab.wait_for_transitions()
    result = page.evaluate(AXE_CONTRAST)
    # Every component's text was in the check, not an empty page.
    assert result["roots"] >= 15 and result["checked"] > 150, result
    # Text axe cannot measure (over a gradient or an image) would escape the check.
    assert len(result["undecided"]) <= 5, result["undecided"]
    return list(result["violations"])


def test_every_component_passes_aa_contrast_in_light_and_dark(lab: LabSession) -> None:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` in js/ (axe-core is a devDependency)")
    path = lab.run_notebook("truth_contrast.ipynb", [*gallery.CELLS, *PANEL_AND_CHATS],
                            timeout=120)
    page = lab.page
    # The approval chat waits for a decision, the last chat streams: both states are read.
    # The chats are told apart by position: all three are drawn first.
    textareas = page.locator(".neta-chat-textarea")
    textareas.nth(2).wait_for()
    textareas.nth(1).fill("Delete old.csv")
    page.locator(".neta-chat-send").nth(1).click()
    page.locator(".neta-chat-approval").wait_for()
    textareas.nth(2).fill("Profile the data")
    page.locator(".neta-chat-send").nth(2).click()
    page.locator(".neta-is-live .neta-chat-text", has_text="Let me plan").wait_for(
        timeout=60_000)
    assert page.locator(".neta-tool-config").count() == 1
    assert page.locator(".neta-sidebar").count() == 1
    found = {}
    for dark in (False, True):
        lab.set_theme(dark=dark)
        found["dark" if dark else "light"] = _contrast_violations(lab)
    lab.set_theme(dark=False)
    lab.execute(path, "session.cancel()")
    assert found == {"light": [], "dark": []}, json.dumps(found, indent=1, ensure_ascii=False)


def test_consecutive_thinking_shows_as_one_block_while_streaming_and_after(
        lab: LabSession) -> None:
    lab.run_notebook("truth_thinking.ipynb", [chat_cells.IMPORTS, chat_cells.GATED_TURN])
    page = lab.page
    page.locator(".neta-chat-textarea").fill("Profile the data in this folder")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-skill-card.neta-skill-card-running", has_text="Column 5/8").wait_for()
    path = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    lab.execute(path, "gates['skill'].set()")
    # The third response only thinks (and writes the plan, which has no card); the fourth
    # thinks on, paused by its gate: one streaming block holds both.
    live = page.locator(".neta-is-live .neta-thinking-block.neta-is-streaming")
    live.wait_for(timeout=30_000)
    page.wait_for_function("""() => {
      const block = document.querySelector('.neta-is-live .neta-thinking-content');
      return block && block.textContent.includes('The profile is back')
        && block.textContent.includes('The profile finished without errors');
    }""", timeout=30_000)
    assert page.locator(".neta-chat-msg.neta-is-merged").count() == 1
    lab.execute(path, "gates['thinking'].set(); gates['text'].set()")
    page.wait_for_function(IDLE, timeout=60_000)
    # After the turn: still one block, folded, with both thoughts, and the hidden message is
    # the thinking-only one.
    merged = page.locator(".neta-chat-msg.neta-is-merged")
    assert merged.count() == 1
    assert merged.locator(".neta-chat-text").evaluate("n => n.textContent.trim()") == ""
    blocks = page.locator(".neta-chat-assistant:not(.neta-is-merged) .neta-thinking-block")
    texts = [b.evaluate("n => n.textContent") for b in blocks.all()]
    together = [t for t in texts if "The profile is back" in t]
    assert len(together) == 1 and "I'll summarise." in together[0]
    assert "neta-is-collapsed" in (blocks.nth(texts.index(together[0])).get_attribute("class")
                                   or "")


def test_send_after_a_kernel_restart_says_why_and_keeps_the_text(lab: LabSession) -> None:
    lab.run_notebook("truth_restart.ipynb", [chat_cells.IMPORTS, SCRIPTED_CHAT])
    page = lab.page
    lab.restart_kernel()
    box = page.locator(".neta-chat-textarea")
    box.fill("Are you there?")
    box.press("Enter")
    error = page.locator(".neta-chat-input .neta-inline-error:not([hidden])")
    error.wait_for()
    assert "kernel restarted or stopped; run the cell again" in (error.text_content() or "")
    assert box.input_value() == "Are you there?"
