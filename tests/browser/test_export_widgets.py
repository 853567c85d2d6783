"""An executed quickstart exported to HTML draws its live widgets from the saved widget state,
with no kernel, where the export's widget manager can load (issue 17).

An nbconvert HTML export with widget state loads require.js and the widget manager
(``@jupyter-widgets/html-manager``'s ``embed-amd.js``) from the web, and the manager then
loads each widget's module (here anywidget's frontend) from its CDN. This test serves those
from the locked packages in ``tests/fixtures/html_manager`` (``npm ci`` there;
``scripts/test.sh`` does it): the export points at the local require.js and widget manager
(``HTMLExporter.require_js_url`` / ``widget_renderer_url``), and the page's requests for
anywidget's module are answered from the local file. Everything else the page asks the web
for is refused, and nothing may be asked but MathJax (math the quickstart does not have).

The page then shows the chat view drawn by the neta_nb bundle (from the one shared bundle
model in the state): the final answer, the plan, the tool and skill cards and the token
figures, read-only — a "Saved" note in place of the input, no Send, nothing spinning — and
the static forms that follow the widgets are not shown beside them. Light and dark
(``--theme dark``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anywidget
import pytest
from ipywidgets._version import __html_manager_version__  # type: ignore[import-untyped]
from nbconvert import HTMLExporter

from neta_nb.escaping import plain_text

from .harness import LabSession

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "html_manager"
MODULES = FIXTURE / "node_modules"
REQUIRE_JS = MODULES / "requirejs" / "require.js"
WIDGET_MANAGER = MODULES / "@jupyter-widgets" / "html-manager" / "dist" / "embed-amd.js"
ANYWIDGET_MODULE = MODULES / "anywidget" / "dist" / "index.js"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SAVED_HINT = json.loads((ROOT / "neta_nb" / "labels.json").read_text())["en"]["saved_view_hint"]


def _fixture_version(package: str) -> str:
    return str(json.loads((MODULES / package / "package.json").read_text())["version"])


def _python_anywidget_frontend_version() -> str:
    """The version of anywidget's frontend that the Python package ships (its lab
    extension): the npm package served here must be that one."""
    labextension = Path(anywidget.__file__).parent / "labextension" / "package.json"
    return str(json.loads(labextension.read_text())["version"])


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: scripts/test.sh)")
    pytest.skip(reason)


def _execute(notebook: str, cwd: Path) -> None:
    """``jupyter nbconvert --execute --to notebook``: a kernel runs this tree's package."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to",
                    "notebook", "--output", "executed", notebook], cwd=cwd, env=env,
                   check=True, timeout=300, capture_output=True)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The quickstart executed once (``--execute --to notebook``, what ``--execute --to
    html`` does before it exports), then exported light and dark, pointed at the local
    require.js and widget manager."""
    if not all(path.is_file() for path in (REQUIRE_JS, WIDGET_MANAGER, ANYWIDGET_MODULE)):
        _missing("run `npm ci` in tests/fixtures/html_manager first")
    # The packages served are the ones this environment's widgets speak to.
    assert _fixture_version("anywidget") == _python_anywidget_frontend_version()
    # ipywidgets names the manager it works with as a caret range ("^1.0.1").
    html_manager = _fixture_version("@jupyter-widgets/html-manager")
    wanted = tuple(int(n) for n in __html_manager_version__.lstrip("^").split("."))
    have = tuple(int(n) for n in html_manager.split("."))
    assert __html_manager_version__.startswith("^") and have[0] == wanted[0] and have >= wanted, \
        (__html_manager_version__, html_manager)

    folder = tmp_path_factory.mktemp("export")
    shutil.copytree(ROOT / "notebooks" / "data", folder / "data")
    shutil.copy(ROOT / "notebooks" / "01_quickstart.ipynb", folder)
    _execute("01_quickstart.ipynb", cwd=folder)
    # The exporter `jupyter nbconvert --to html [--theme dark]` runs, with the same
    # settings, in this process (each command would start Python and nbconvert again).
    pages = {}
    for theme in ("light", "dark"):
        exporter = HTMLExporter(theme=theme, require_js_url=REQUIRE_JS.as_uri(),
                                widget_renderer_url=WIDGET_MANAGER.as_uri())
        html, _ = exporter.from_filename(str(folder / "executed.ipynb"))
        pages[theme] = folder / f"quickstart-{theme}.html"
        pages[theme].write_text(html, encoding="utf-8")
    return pages


def _saved_state(page: Path) -> dict[str, Any]:
    text = page.read_text()
    state: dict[str, Any] = json.loads(
        text.split(f'<script type="{WIDGET_STATE}">')[1].split("</script>")[0])
    return state


class OfflinePage:
    """A tab on an export whose web requests are answered from the fixture or refused."""

    def __init__(self, lab: LabSession, export: Path, anywidget_version: str) -> None:
        self.served: list[str] = []
        self.refused: list[str] = []
        self.errors: list[str] = []
        # The manager asks its CDN for `<base>anywidget@<the model's module version>/dist/
        # index.js`, whatever the base: the path is what names the module.
        module_path = re.compile(rf"/anywidget@{re.escape(anywidget_version)}/dist/index\.js$")
        self.page = lab.page.context.new_page()
        self.page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        self.page.on("console", lambda message: self.errors.append(message.text)
                     if message.type == "error" else None)

        def answer(route: Any) -> None:
            url = route.request.url
            if url.startswith("file:"):
                route.continue_()
            elif module_path.search(url):
                self.served.append(url)
                route.fulfill(path=str(ANYWIDGET_MODULE), content_type="text/javascript")
            else:
                self.refused.append(url)
                route.abort()

        self.page.route("**/*", answer)
        self.page.set_viewport_size({"width": 1000, "height": 1400})
        self.page.goto(export.as_uri())


def test_an_export_with_the_widget_manager_shows_the_live_widgets_read_only(
        exports: dict[str, Path], lab: LabSession, screenshot_dir: Path) -> None:
    state = _saved_state(exports["light"])
    models = list(state["state"].values())
    (chat,) = [m for m in models if m["state"].get("_component") == "chat-view"]
    final = next(m["text"] for m in reversed(chat["state"]["messages"])
                 if m["role"] == "assistant" and m["text"].strip())
    version = chat["model_module_version"]

    for theme, export in exports.items():
        tab = OfflinePage(lab, export, version)
        page = tab.page
        try:
            view = page.locator(".neta-chat-view")
            view.wait_for(timeout=30_000)
            # The answer as it ended, its plan and its cards, drawn by the bundle.
            answer = view.locator(".neta-chat-assistant").last
            ending = " ".join(plain_text(final).split())[-60:]
            assert ending in " ".join(answer.inner_text().split())
            assert "3/3" in (view.locator(".neta-todo-card").text_content() or "")
            assert view.locator(".neta-tool-card").count() >= 1
            assert view.locator(".neta-skill-card").count() >= 1
            assert "5 calls" in (view.locator(".neta-token-stats").text_content() or "")
            # Read-only, and not waiting for a kernel: a note instead of the input, no
            # Send, nothing that spins.
            saved = view.locator(".neta-chat-saved")
            assert saved.is_visible()
            assert (saved.text_content() or "").endswith(SAVED_HINT)
            assert view.locator(".neta-chat-textarea").is_hidden()
            assert view.locator(".neta-chat-send").is_hidden()
            assert view.locator(".neta-chat-working").is_hidden()
            assert "neta-is-running" not in (view.get_attribute("class") or "")
            # The quickstart's own TodoCard is a live widget too.
            cards = page.locator(".neta-todo-card:not(.neta-chat-view .neta-todo-card)")
            cards.first.wait_for()  # drawn on its own, after the chat perhaps
            assert cards.count() == 1 and "3/3" in (cards.first.text_content() or "")
            # Each widget's static form is in the page, not shown beside its live view.
            forms = page.locator(".neta-static-form")
            assert forms.count() == 2
            page.wait_for_function("() => [...document.querySelectorAll('.neta-static-form')]"
                                   ".every((form) => form.getClientRects().length === 0)")
            assert page.locator(".neta-load-error").count() == 0

            # The widget code came from the page itself; the web gave nothing.
            assert len(tab.served) == 1, tab.served
            assert all("mathjax" in url.lower() for url in tab.refused), tab.refused
            # The console's errors are the refused MathJax and require.js looking for the
            # module beside the page first (its fallback is the manager's CDN).
            unexpected = [e for e in tab.errors if not e.startswith("Failed to load resource")]
            assert not unexpected, unexpected

            page.wait_for_timeout(300)  # the messages' entry transition
            view.screenshot(path=str(screenshot_dir / f"export-widgets-chat-{theme}.png"))
            # Its start too: the prompt, the thinking, the tool and skill cards.
            view.locator(".neta-chat-scroll").evaluate("scroller => { scroller.scrollTop = 0; }")
            page.wait_for_timeout(100)
            view.screenshot(path=str(screenshot_dir / f"export-widgets-chat-start-{theme}.png"))
            cards.first.screenshot(path=str(screenshot_dir / f"export-widgets-todo-{theme}.png"))
        finally:
            page.close()
