"""Notebook-native I/O in real JupyterLab: a tool card shows the chart and the table the
``python`` tool made (the table's HTML sanitized: no script runs, no handler fires), and
the chat's input bar attaches files with its button and by drag-and-drop, refuses one
that is too large before anything is sent, and sends the others with the prompt."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import chat_cells
from .harness import LabSession

if TYPE_CHECKING:
    from playwright.sync_api import FilePayload

pytestmark = pytest.mark.browser

# The page has applied the end of the turn (the kernel's `running` is False a moment before).
VIEW_IDLE = ("() => !document.querySelector('.neta-chat-view')"
             ".classList.contains('neta-is-running')")
Image = pytest.importorskip("PIL.Image")
pytest.importorskip("matplotlib")
pytest.importorskip("pandas")

CODE = '''
import matplotlib.pyplot as plt
import pandas as pd
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(["Mon", "Tue", "Wed", "Thu", "Fri"], [120, 135, 98, 160, 150], marker="o")
ax.set_title("Weekly sales")
class Raw:
    def _repr_html_(self):
        return ('<p><b>raw html</b></p><script>window.__neta_pwned = 3</script>'
                '<img src="x" onerror="window.__neta_pwned = 4">'
                # What a hostile tool would try next: handlers that fire on their own,
                # documents and SVG with script, links that run or navigate, page styles.
                '<details open ontoggle="window.__neta_pwned = 5"><summary>s</summary></details>'
                '<iframe srcdoc="<script>parent.__neta_pwned = 6</script>"></iframe>'
                '<svg onload="window.__neta_pwned = 7">'
                '<script>window.__neta_pwned = 8</script></svg>'
                '<a id="js" href="javascript:window.__neta_pwned = 9">js link</a>'
                '<a id="doc" href="data:text/html,<script>alert(1)</script>">data link</a>'
                '<style>body { display: none }</style>'
                '<object data="data:text/html,x"></object><embed src="x.swf">'
                '<form action="http://127.0.0.1:9/">'
                '<input autofocus onfocus="window.__neta_pwned = 10"></form>'
                '<meta http-equiv="refresh" content="0;url=javascript:window.__neta_pwned = 11">'
                '<video><source onerror="window.__neta_pwned = 12"></video>')
display(Raw())
pd.DataFrame({"region": ["North", "South", "<script>window.__neta_pwned = 1</script>"],
              "sales": [120, 95, 3],
              "note": ['<img src=x onerror="window.__neta_pwned = 2">', "ok", "fine"]})
'''.strip()

RICH_CELLS = [
    chat_cells.IMPORTS,
    f"CODE = {CODE!r}",
    """
from neta_nb.widgets import ToolCard
provider = ScriptedProvider([[{"tool_call": {"name": "python", "args": {"code": CODE}}}],
                             [{"text": "Here are the chart and the table."}]])
session = AgentSession(Agent("analyst", model=provider,
                             tools=AgentToolConfig(enabled=["python"])),
                       approval_policy="allow")
await session.run("Chart the week and show the table")
execution = session.messages[1].metadata.tool_executions[0]
card = ToolCard(name=execution.name, label=execution.label, status=execution.status,
                args=execution.args, result=execution.result,
                outputs=[item.model_dump() for item in execution.outputs])
card
""".strip(),
    "chat = ChatView(session)\nchat",
]


def test_tool_card_shows_the_chart_and_a_sanitized_table(lab: LabSession,
                                                         screenshot_dir: Path) -> None:
    path = lab.run_notebook("rich_output.ipynb", RICH_CELLS, timeout=120)
    page = lab.page
    standalone = page.locator(".jp-OutputArea-output .neta-tool-card").first
    standalone.locator(".neta-output-image img").wait_for()
    # The figure as the kernel rendered it (its dpi is the backend's: 100 headless, the
    # inline backend's in a notebook).
    kernel_size = [int(n) for n in lab.execute(
        path, "print(execution.outputs[1].width, execution.outputs[1].height)").split()]
    for card in (standalone, page.locator(".neta-chat-view .neta-tool-card").first):
        card.locator(".neta-output-html table").wait_for()
        image = card.locator(".neta-output-image img")
        page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                               arg=image.element_handle())
        shown = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert shown == kernel_size, (shown, kernel_size)
        assert card.locator(".neta-output-html").count() == 2  # the raw HTML and the table
        assert card.locator(".neta-output-html b").inner_text() == "raw html"
        cells = card.locator(".neta-output-html table td").all_inner_texts()
        assert "<script>window.__neta_pwned = 1</script>" in cells  # shown as text
        # Nothing executable or loading survived the sanitizer.
        assert card.locator(".neta-outputs script, .neta-outputs [onerror], "
                            ".neta-outputs style, .neta-outputs iframe, .neta-outputs svg, "
                            ".neta-outputs object, .neta-outputs embed, .neta-outputs form, "
                            ".neta-outputs input, .neta-outputs meta, .neta-outputs video, "
                            ".neta-outputs [ontoggle], .neta-outputs [onload]").count() == 0
        links = card.locator(".neta-output-html a").evaluate_all(
            "links => links.map(a => a.getAttribute('href'))")
        assert all(not (href or "").lower().startswith(("javascript:", "data:"))
                   for href in links), links
        assert page.evaluate("() => getComputedStyle(document.body).display") != "none"
    assert page.evaluate("() => window.__neta_pwned") is None
    # What the model read: the table's text and a line about what was displayed.
    width, height = kernel_size
    assert f"Displayed: HTML, image ({width}×{height} PNG), HTML" in lab.execute(
        path, "print(execution.result)")

    names = []
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        lab.wait_for_frames()
        names.append(lab.screenshot(standalone, screenshot_dir / f"rich-tool-card-{theme}.png"))
        names.append(lab.screenshot(page.locator(".neta-chat-view").first,
                                    screenshot_dir / f"rich-chat-card-{theme}.png"))
    assert all(name.stat().st_size > 10_000 for name in names)
    assert page.evaluate("() => window.__neta_pwned") is None


ATTACH_CELLS = [
    chat_cells.IMPORTS,
    """
import base64
class Recording(ScriptedProvider):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.prompts = []

    async def stream(self, request):
        self.prompts.append(request.messages[-1].model_copy(deep=True))
        async for event in super().stream(request):
            yield event

provider = Recording([[{"text": "Got them."}]])
session = AgentSession(Agent("analyst", model=provider))
def sent(n):
    if len(provider.prompts) <= n:
        return None  # not sent yet: the page's request is on its way
    prompt = provider.prompts[n]
    return [(p.type, getattr(p, "name", None)) for p in prompt.parts]
chat = ChatView(session)
chat
""".strip(),
]

CSV = "region,sales\nNorth,120\nSouth,95\n"


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (30, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


DROP_JS = """
([selector, files]) => {
  const transfer = new DataTransfer();
  for (const file of files) {
    const bytes = file.size !== undefined ? new Uint8Array(file.size)
      : Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
    transfer.items.add(new File([bytes], file.name, { type: file.type }));
  }
  const target = document.querySelector(selector);
  for (const type of ["dragenter", "dragover", "drop"]) {
    const init = { bubbles: true, cancelable: true, dataTransfer: transfer };
    target.dispatchEvent(new DragEvent(type, init));
  }
}
"""


def test_attach_with_the_button_and_by_drop_and_refuse_a_large_file(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("attachments.ipynb", ATTACH_CELLS)
    page = lab.page
    view = page.locator(".neta-chat-view")
    view.wait_for()
    png = _png()
    files: list[FilePayload] = [
        {"name": "chart.png", "mimeType": "image/png", "buffer": png},
        {"name": "sales.csv", "mimeType": "text/csv", "buffer": CSV.encode()}]

    # The button next to the agent selector opens the file picker.
    toolbar = view.locator(".neta-chat-toolbar > *")
    classes = [c.split()[0] for c in toolbar.evaluate_all("els => els.map(e => e.className)")]
    assert classes[:2] == ["neta-chat-agent", "neta-chat-attach"]
    with page.expect_file_chooser() as chooser:
        view.locator(".neta-chat-attach").click()
    chooser.value.set_files(files)
    chips = view.locator(".neta-attachment-tray .neta-attachment-chip")
    assert [text.split("\n") for text in chips.all_inner_texts()] == [
        ["chart.png", f"{len(png)} B", "×"], ["sales.csv", f"{len(CSV)} B", "×"]]
    assert "10.0 MB per file, 20.0 MB in all" in view.locator(
        ".neta-attachment-limits").inner_text()
    lab.screenshot(view.locator(".neta-chat-input"),
                   screenshot_dir / "chat-attachments-light.png")
    # The cell chip's cell goes with a Send (tests/browser/test_cell_context.py): this
    # test is about files, so it is taken off first.
    view.locator(".neta-cell-chip-remove").click()
    view.locator(".neta-cell-chip-bar").wait_for(state="hidden")
    view.locator(".neta-chat-textarea").fill("Look at these")
    view.locator(".neta-chat-textarea").press("Enter")
    lab.wait_for_kernel_value(path, "sent(0)", "[('text', None), ('image', 'chart.png'), "
                              "('file_text', 'sales.csv')]")
    assert lab.execute(path, "print(base64.b64decode(provider.prompts[0].parts[1].data) == "
                             f"{png!r}, provider.prompts[0].parts[2].text == {CSV!r})"
                       ).strip() == "True True"
    user = view.locator(".neta-chat-user").first
    user.locator(".neta-attachment-chip").nth(1).wait_for()
    assert user.locator(".neta-attachment-thumb").count() == 1
    assert chips.count() == 0  # the tray is empty again
    lab.wait_for_kernel_value(path, "session.running", "False")
    page.wait_for_function(VIEW_IDLE)  # a drop on a running chat's tray is refused

    # Drag-and-drop onto the chat.
    as_drop = [{"name": f["name"], "type": f["mimeType"],
                "base64": base64.b64encode(f["buffer"]).decode()} for f in files]
    page.evaluate(DROP_JS, [".neta-chat-view", as_drop])
    assert chips.count() == 2
    view.locator(".neta-chat-textarea").fill("And again")
    view.locator(".neta-chat-send").click()
    assert lab.wait_for_kernel_value(path, "sent(1)", "[('text', None), ('image', 'chart.png'), "
                                     "('file_text', 'sales.csv')]")
    lab.wait_for_kernel_value(path, "session.running", "False")
    page.wait_for_function(VIEW_IDLE)

    # Too large: refused in the page, with a message, and nothing sent.
    page.evaluate(DROP_JS, [".neta-chat-view", [
        {"name": "huge.csv", "type": "text/csv", "size": 10 * 1024 * 1024 + 1}]])
    error = view.locator(".neta-chat-input .neta-inline-error")
    error.wait_for()
    assert "huge.csv is 10.0 MB: at most 10.0 MB per file" in error.inner_text()
    assert chips.count() == 0
    lab.screenshot(view.locator(".neta-chat-input"),
                   screenshot_dir / "chat-attachment-refused-light.png")
    assert lab.execute(path, "print(len(provider.prompts))").strip() == "2"

    # A file the model cannot take comes back as the send's error; the files stay.
    page.evaluate(DROP_JS, [".neta-chat-view", [
        {"name": "data.zip", "type": "application/zip", "base64": "UEsDBA=="}]])
    view.locator(".neta-chat-textarea").fill("Unzip this")
    view.locator(".neta-chat-textarea").press("Enter")
    page.wait_for_function("() => document.querySelector('.neta-chat-input .neta-inline-error')"
                           ".textContent.includes('application/zip files cannot be sent')")
    assert chips.count() == 1
    assert view.locator(".neta-chat-textarea").input_value() == "Unzip this"
    assert lab.execute(path, "print(len(provider.prompts))").strip() == "2"
