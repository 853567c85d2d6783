"""Requests from views can never hang, in real JupyterLab: a handler that raises answers
with an error shown where the user clicked, and a kernel restart while a request is pending
gives the control back with an error instead of a spinner."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.timing import poll_until
from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

INPUT_ERROR = ".neta-chat-input .neta-inline-error:not([hidden])"

# Replace one request handler of a widget class in the kernel (as a bug would).
BREAK_HANDLER = """
from neta_nb.widgets import ChatView, SessionSidebar

def broken(self, request):
    raise RuntimeError("the provider client was closed")

ChatView._request_handlers["command"].function = broken
SessionSidebar._request_handlers["open"].function = broken
"""

BLOCK_HANDLER = """
import pathlib, time
from neta_nb.widgets import ChatView

def blocked(self, request):
    # Kernel-side user code that never returns (the stuck handler under test), not a
    # wait in the test: only the kernel restart below ends it. It says when it started.
    pathlib.Path({started!r}).touch()
    time.sleep(60)
    return {{"running": False}}

ChatView._request_handlers["command"].function = blocked
"""

_RESTART_JS = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path) {
      // The session context's restart: no confirmation dialog, unlike the menu command.
      void w.sessionContext.restartKernel();
      return true;
    }
  }
  throw new Error('notebook not open: ' + path);
}"""

_KERNEL_IDLE_JS = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path) {
      return w.sessionContext.session?.kernel?.status === 'idle';
    }
  }
  return false;
}"""


def test_a_failing_handler_shows_its_error_where_the_user_clicked(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("request_errors.ipynb", [chat_cells.IMPORTS, chat_cells.SIDEBAR])
    page = lab.page
    page.locator(".neta-sidebar-item").nth(1).wait_for()
    lab.execute(path, BREAK_HANDLER)

    # Send: the error shows above the input, the typed text comes back, Send works again.
    page.locator(".neta-chat-textarea").fill("Chart the sales by region")
    page.locator(".neta-chat-send").click()
    error = page.locator(INPUT_ERROR)
    error.wait_for()
    assert error.locator(".neta-chat-error-text").text_content() == (
        "RuntimeError: the provider client was closed")
    assert page.locator(".neta-chat-textarea").input_value() == "Chart the sales by region"
    assert page.locator(".neta-chat-send").is_enabled()
    # Not in the notice at the end of the conversation: that one is for the session's own.
    assert page.locator(".neta-chat-notice").is_hidden()

    # Opening a session: the error shows on the row that was clicked.
    row = page.locator(".neta-sidebar-item:not(.neta-is-active)").first
    row.click()
    row_error = row.locator(".neta-inline-error:not([hidden])")
    row_error.wait_for()
    assert "RuntimeError: the provider client was closed" in (row_error.text_content() or "")
    page.wait_for_function("() => !document.querySelector('.neta-sidebar-item.neta-is-opening')")
    # The row can be clicked again (nothing spins), and the error is shown once.
    row.click()
    page.wait_for_function("() => !document.querySelector('.neta-sidebar-item.neta-is-opening')")
    assert page.locator(".neta-sidebar .neta-inline-error:not([hidden])").count() == 1
    for dark in (False, True):
        lab.set_theme(dark=dark)
        suffix = "dark" if dark else "light"
        lab.screenshot(page.locator(".neta-chat-input"),
                       screenshot_dir / f"request-error-input-{suffix}.png")
        lab.screenshot(page.locator(".neta-sidebar"),
                       screenshot_dir / f"request-error-sidebar-{suffix}.png")


def test_a_kernel_restart_while_a_request_is_pending_gives_the_control_back(
        lab: LabSession, screenshot_dir: Path, tmp_path: Path) -> None:
    path = lab.run_notebook("request_restart.ipynb", [
        chat_cells.IMPORTS, "CPS = 400", chat_cells.RECORDING_DEMO])
    page = lab.page
    page.locator(".neta-chat-empty").wait_for()
    started = tmp_path / "handler-started"
    lab.execute(path, BLOCK_HANDLER.format(started=str(started)))

    page.locator(".neta-chat-textarea").fill("Profile the data")
    page.locator(".neta-chat-send").click()
    # In flight: the input was taken, no answer can come while the handler blocks. (The
    # kernel's status is no sign of it: the widget manager may send on a subshell, which
    # hands the request to the main loop and reports idle.)
    page.wait_for_function("() => document.querySelector('.neta-chat-textarea').value === ''")
    poll_until(started.exists, within=30, what="the blocked handler never started")
    assert page.locator(INPUT_ERROR).count() == 0

    page.evaluate(_RESTART_JS, path)
    # The restart is seen at once: well before the request's own 10 s timeout.
    error = page.locator(INPUT_ERROR)
    error.wait_for(timeout=5_000)
    assert "kernel restarted or stopped" in (error.text_content() or "")
    assert page.locator(".neta-chat-textarea").input_value() == "Profile the data"
    assert page.locator(".neta-chat-send").is_enabled()
    for dark in (False, True):
        lab.set_theme(dark=dark)
        suffix = "dark" if dark else "light"
        lab.screenshot(page.locator(".neta-chat-input"),
                       screenshot_dir / f"request-restart-input-{suffix}.png")
    # The kernel comes back before the notebook is closed.
    page.wait_for_function(_KERNEL_IDLE_JS, arg=path, timeout=60_000, polling=200)
