"""A reusable harness that drives real JupyterLab in Debian's Chromium.

* :class:`JupyterLabServer` starts ``jupyter lab`` on 127.0.0.1 with a temporary root,
  config, runtime, data, IPython and settings dirs, a random token and a free port, in its
  own process group; :meth:`~JupyterLabServer.stop` ends that group.
* :class:`LabSession` is one Chromium tab on that server: it writes notebooks, opens them
  through ``window.jupyterapp`` commands (reliable where keyboard shortcuts are not), runs
  them, executes code in the notebook's kernel and reads the output, switches the theme,
  takes screenshots, and records console errors.

The widget tests use it through fixtures in ``conftest.py``; the chat view's tests and the
benchmarks can use the same classes.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from ..support.offline import clear_provider_environment, write_kernel_guard
from ..support.ports import free_port
from ..support.timing import poll_until

__all__ = [
    "CHROMIUM",
    "ConsoleMessage",
    "JupyterLabServer",
    "LabSession",
    "chromium_missing_reason",
    "launch_chromium",
    "notebook7_server",
    "write_notebook",
]

CHROMIUM = Path("/usr/bin/chromium")

# Keep Chromium quiet on a closed network: no background fetches, nothing but 127.0.0.1.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]

# User settings that keep pop-ups off the page and render every cell (no windowing, so an
# output scrolled out of view still exists in the DOM).
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def chromium_missing_reason() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return (f"{CHROMIUM} is missing; install Debian's Chromium "
                "(apt-get install chromium) to run the browser tests")
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (pip install -e '.[test]')"
    return None


@dataclass
class JupyterLabServer:
    """``jupyter lab`` in a temporary home of its own."""

    base_dir: Path
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    settings: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(LAB_SETTINGS))
    """User settings files (path under the settings dir → values); :data:`LAB_SETTINGS`
    unless a test needs others (saving widget state, say)."""
    launcher: list[str] | None = None
    """A command that starts JupyterLab itself (e.g. ``neta-nb lab --dir ROOT --port P
    --no-browser --``); it must use :attr:`root_dir` and :attr:`port`. The server's other
    arguments are appended to it."""

    @property
    def root_dir(self) -> Path:
        return self.base_dir / "root"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, path: str = "") -> str:
        tree = f"/tree/{path}" if path else ""
        return f"{self.url}/lab{tree}?token={self.token}"

    def start(self, timeout: float = 60.0) -> None:
        dirs = {name: self.base_dir / name for name in
                ("root", "config", "runtime", "data", "ipython", "settings", "workspaces")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        for relative, values in self.settings.items():
            target = dirs["settings"] / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "IPYTHONDIR": str(dirs["ipython"]),
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        env.pop("ANYWIDGET_HMR", None)
        # The run already cleared these; a harness started on its own (a benchmark) must
        # not hand a key to the kernels either, nor let them reach anything but 127.0.0.1.
        clear_provider_environment(env)
        write_kernel_guard(dirs["ipython"])
        server_args = [
            "--ip=127.0.0.1", "--port-retries=0",
            f"--IdentityProvider.token={self.token}", "--allow-root",
            "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            f"--LabApp.workspaces_dir={dirs['workspaces']}",
            f"--LabApp.user_settings_dir={dirs['settings']}",
        ]
        command = ([*self.launcher, *server_args] if self.launcher else [
            sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={self.port}",
            f"--ServerApp.root_dir={dirs['root']}", *server_args])
        log = (self.base_dir / "server.log").open("wb")
        # Own process group: stop() ends the server and every kernel it started.
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        log.close()
        try:
            poll_until(self._answers, within=timeout, what="jupyter lab did not answer",
                       interval=0.2)
        except AssertionError:
            self.stop()
            raise

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early; see {self.base_dir / 'server.log'}")
        status_url = f"{self.url}/api/status?token={self.token}"
        with contextlib.suppress(OSError), urllib.request.urlopen(status_url,
                                                                  timeout=2) as response:
            return bool(response.status == 200)
        return False

    def _api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """End every session and kernel the server runs (a server shared by several test
        files is left as it started, but for the files those wrote into its root)."""
        for session in self._api("GET", "/api/sessions"):
            with contextlib.suppress(urllib.error.HTTPError):  # ended meanwhile
                self._api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self._api("GET", "/api/kernels"):
            with contextlib.suppress(urllib.error.HTTPError):
                self._api("DELETE", f"/api/kernels/{kernel['id']}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log_text(self) -> str:
        path = self.base_dir / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


def notebook7_server(base_dir: Path) -> JupyterLabServer:
    """A Notebook 7 server (``jupyter notebook``), set up like the JupyterLab one; call
    :meth:`~JupyterLabServer.start`. Its notebook pages are ``/notebooks/<path>``."""
    server = JupyterLabServer(base_dir)
    server.launcher = [
        sys.executable, "-m", "notebook", "--no-browser", f"--port={server.port}",
        f"--ServerApp.root_dir={server.root_dir}",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        f"--JupyterNotebookApp.user_settings_dir={server.base_dir / 'settings'}",
    ]
    return server


def write_notebook(root: Path, name: str, cells: Sequence[str]) -> str:
    """A notebook of code ``cells`` (Python 3) written at ``name`` under ``root``; returns
    ``name``."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return name


@contextlib.contextmanager
def launch_chromium(user_data_dir: Path, *, device_scale_factor: float = 2) -> Iterator[Any]:
    """A persistent Chromium context (Playwright refuses ``--user-data-dir`` in args)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(user_data_dir), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1200, "height": 1100},
            device_scale_factor=device_scale_factor,
        )
        try:
            yield context
        finally:
            context.close()


@dataclass
class ConsoleMessage:
    type: str
    text: str
    location: str = ""


# Messages JupyterLab itself logs on a fresh, offline profile; none is about our widgets.
BENIGN_CONSOLE_ERRORS = (
    "Failed to load resource: the server responded with a status of 404",
    "net::ERR_NAME_NOT_RESOLVED",
)

# JupyterLab opens a kernel subshell for widget comms (ipykernel 7); a kernel restarted
# while that request is in flight cancels it, and JupyterLab leaves the rejection
# unhandled. Ours only after a restart a test makes on purpose (`restart_kernel`).
SUBSHELL_CANCELLED_ON_RESTART = "Error: Canceled future for create_subshell_request message"

# The notebook panel open at `path` (JupyterLab's main area widgets).
_FIND_NOTEBOOK = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path) return w;
  }
  throw new Error('notebook not open: ' + path);
}"""

# Runs a snippet in the notebook's kernel and returns its stdout + text/plain result.
_EXECUTE_JS = """
async ([path, code, seconds]) => {
  const widget = FIND_NOTEBOOK(path);
  const kernel = widget.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code, store_history: false, silent: false });
  // A reply or idle status the server dropped (its IOPub rate limit) would wait for ever.
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${seconds} s: ${code}`)),
                       seconds * 1000);
  });
  let out = '';
  let error = null;
  future.onIOPub = (msg) => {
    const type = msg.header.msg_type;
    if (type === 'stream') out += msg.content.text;
    else if (type === 'execute_result') out += msg.content.data['text/plain'] ?? '';
    else if (type === 'error') error = msg.content.ename + ': ' + msg.content.evalue;
  };
  try {
    await Promise.race([future.done, late]);
  } finally {
    clearTimeout(timer);
  }
  if (error) throw new Error(error);
  return out;
}
"""

_OPEN_JS = """
async (path) => {
  const app = window.jupyterapp;
  await app.started;
  await app.restored;
  const widget = await app.commands.execute('docmanager:open', { path, factory: 'Notebook' });
  await widget.context.ready;
  await widget.sessionContext.ready;
  await widget.revealed;
  return true;
}
"""

_RUN_ALL_JS = """
async (path) => {
  const app = window.jupyterapp;
  const widget = FIND_NOTEBOOK(path);
  app.shell.activateById(widget.id);
  await app.commands.execute('notebook:run-all-cells');
  return true;
}
"""

_ALL_RAN_JS = """
(path) => {
  const w = FIND_NOTEBOOK(path);
  const cells = Array.from(w.content.model.cells).filter((c) => c.type === 'code');
  const busy = w.sessionContext.session?.kernel?.status !== 'idle';
  return !busy && cells.every((c) => c.executionCount !== null);
}
"""

_EXECUTE_JS, _RUN_ALL_JS, _ALL_RAN_JS = (
    snippet.replace("FIND_NOTEBOOK", f"({_FIND_NOTEBOOK})")
    for snippet in (_EXECUTE_JS, _RUN_ALL_JS, _ALL_RAN_JS)
)

_CLOSE_ALL_JS = """
async () => {
  const app = window.jupyterapp;
  for (const w of Array.from(app.shell.widgets('main'))) {
    if (w.context) {
      w.context.model.dirty = false;
      try {
        await w.sessionContext.shutdown?.();
      } catch (error) {
        // A kernel a test restarted or killed may refuse the shutdown request (the server
        // answers an error while it restarts); the server stops it with the session.
        console.warn('closing a notebook: its kernel did not shut down', error);
      }
    }
    w.dispose();
  }
  return true;
}
"""


_TWO_FRAMES_JS = ("() => new Promise((done) => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => done(true))))")
# No CSS transition and no finite CSS animation (an entrance, a flash) is running, in the
# whole document or under one element. Endless animations (a streaming cursor, a spinner)
# never finish, so they do not count.
_SETTLED_JS = """(scope) => {
  const animations = scope ? scope.getAnimations({ subtree: true }) : document.getAnimations();
  return animations.every((a) => a.playState !== 'running'
    || (a instanceof CSSAnimation && a.effect?.getComputedTiming().iterations === Infinity));
}"""
# Every <img> under the selector has loaded or failed (a failed load sets `complete` too,
# in the same task that fires `error`), so any load/error handler has had its chance.
_IMAGES_DONE_JS = """(selector) => Array.from(document.querySelectorAll(selector))
  .flatMap((root) => Array.from(root.querySelectorAll('img'))).every((img) => img.complete)"""
# What would make rendered text active, under every element matching the selector: event
# handler attributes, scripts, frames and plugins, and javascript: URLs in any attribute.
_ACTIVE_CONTENT_JS = """(selector) => {
  const roots = Array.from(document.querySelectorAll(selector));
  // A widget inside another one is one subtree, counted once.
  const all = Array.from(new Set(roots.flatMap((r) => Array.from(r.querySelectorAll('*')))));
  const attributes = all.flatMap((el) => Array.from(el.attributes));
  return {
    roots: roots.length,
    scripts: all.filter((el) => el.localName === 'script').length,
    frames: all.filter((el) => ['iframe', 'frame', 'object', 'embed']
      .includes(el.localName)).length,
    handlers: attributes.filter((a) => a.name.toLowerCase().startsWith('on')).length,
    js_urls: attributes.filter((a) => /^\\s*javascript:/i
      .test(a.value.replace(/[\\u0000-\\u001f]/g, ''))).length,
  };
}"""
# Lumino lays the shell out in an animation frame after a resize: once it has caught up,
# the status bar ends at the bottom of the window and the main area ends where it begins.
_SHELL_FITS_WINDOW_JS = """([width, height]) => {
  if (window.innerWidth !== width || window.innerHeight !== height) return false;
  const bar = document.getElementById('jp-main-statusbar')?.getBoundingClientRect();
  const main = document.getElementById('jp-main-split-panel')?.getBoundingClientRect();
  if (!bar || !main) throw new Error('not the JupyterLab shell');
  return Math.abs(bar.bottom - height) < 1 && Math.abs(main.bottom - bar.top) < 1;
}"""


class LabSession:
    """One JupyterLab tab. Use :meth:`run_notebook`, then query ``page`` and
    :meth:`execute`. Console errors are collected in :attr:`console_errors`."""

    def __init__(self, server: JupyterLabServer, context: Any, url: str | None = None) -> None:
        self.server = server
        self.page = context.new_page()
        self.console_errors: list[ConsoleMessage] = []
        self.page.on("console", self._on_console)
        self._kernel_restarted = False
        self.page.on("pageerror", self._on_page_error)
        self.goto(url)
        self._layout: dict[str, Any] | None = None

    def remember_layout(self) -> None:
        """Note the tab's size and JupyterLab's side areas, for :meth:`restore_layout`."""
        self._layout = self._current_layout()

    def _current_layout(self) -> dict[str, Any]:
        return {"viewport": dict(self.page.viewport_size or {}),
                "left_collapsed": bool(self.page.evaluate("() => window.jupyterapp.shell"
                                                          ".leftCollapsed")),
                "right_collapsed": bool(self.page.evaluate("() => window.jupyterapp.shell"
                                                           ".rightCollapsed"))}

    def restore_layout(self) -> None:
        """Put the tab back as it opened: its size and JupyterLab's side areas. A test that
        narrowed the window or collapsed an area leaves it so otherwise, and the next test
        on this tab meets a notebook squeezed between the areas (at 800 pixels with both
        open, the main area is 100 pixels wide and a chat's words have no width)."""
        if self._layout is None:
            return
        now = self._current_layout()
        if now["viewport"] != self._layout["viewport"]:
            self.set_viewport_size(self._layout["viewport"])
        if now["left_collapsed"] != self._layout["left_collapsed"]:
            self.set_left_area(collapsed=self._layout["left_collapsed"])
        if now["right_collapsed"] != self._layout["right_collapsed"]:
            self.page.evaluate("(collapsed) => collapsed ? window.jupyterapp.shell"
                               ".collapseRight() : window.jupyterapp.shell.expandRight()",
                               self._layout["right_collapsed"])

    def goto(self, url: str | None = None) -> None:
        """Load JupyterLab at ``url`` (the lab's root by default) and wait until it has
        started and restored its workspace."""
        self.page.goto(url or self.server.lab_url(), wait_until="domcontentloaded")
        self._wait_for_lab()

    def reload(self) -> None:
        """Reload the page, as a user does, and wait until JupyterLab has started and
        restored its workspace."""
        self.page.reload(wait_until="domcontentloaded")
        self._wait_for_lab()

    def _wait_for_lab(self) -> None:
        self.page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        self.page.evaluate("async () => { await window.jupyterapp.started; "
                           "await window.jupyterapp.restored; }")

    def send_in_chat(self, text: str) -> None:
        """Type ``text`` in the page's chat input box and send it (one chat view shown)."""
        self.page.locator(".neta-chat-textarea").fill(text)
        self.page.locator(".neta-chat-send").click()

    def _on_console(self, message: Any) -> None:
        if message.type != "error":
            return
        text = message.text
        if any(benign in text for benign in BENIGN_CONSOLE_ERRORS):
            return
        location = message.location or {}
        self.console_errors.append(ConsoleMessage("error", text, str(location.get("url", ""))))

    def _on_page_error(self, error: Any) -> None:
        text = str(error)
        if self._kernel_restarted and text.startswith(SUBSHELL_CANCELLED_ON_RESTART):
            return
        self.console_errors.append(ConsoleMessage("pageerror", text))

    # --- notebooks -----------------------------------------------------------------

    def write_notebook(self, name: str, cells: Sequence[str]) -> str:
        return write_notebook(self.server.root_dir, name, cells)

    def open_notebook(self, path: str) -> None:
        self.page.evaluate(_OPEN_JS, path)

    def run_all(self, path: str, timeout: float = 60.0) -> None:
        self.page.evaluate(_RUN_ALL_JS, path)
        self.page.wait_for_function(_ALL_RAN_JS, arg=path, timeout=timeout * 1000, polling=100)

    def run_notebook(self, name: str, cells: Sequence[str], timeout: float = 60.0) -> str:
        """Write, open and run a notebook; returns its path (for :meth:`execute`)."""
        path = self.write_notebook(name, cells)
        self.open_notebook(path)
        self.run_all(path, timeout=timeout)
        return path

    def execute(self, path: str, code: str, timeout: float = 120.0) -> str:
        """Run ``code`` in the kernel of the open notebook ``path``; returns stdout plus
        the text/plain of the result. A Python exception, or no reply within ``timeout``
        seconds, raises here."""
        return str(self.page.evaluate(_EXECUTE_JS, [path, code, timeout]))

    def wait_for_kernel_value(self, path: str, expression: str, expected: str,
                              timeout: float = 10.0) -> str:
        """Poll ``print(expression)`` until it prints ``expected`` (a view's change reaches
        the kernel asynchronously), and return it; an AssertionError names the last value
        seen when ``timeout`` seconds pass without it."""
        seen = [""]

        def arrived() -> bool:
            seen[0] = self.execute(path, f"print({expression})").strip()
            return seen[0] == expected

        try:
            poll_until(arrived, within=timeout, what=expression)
        except AssertionError:
            raise AssertionError(f"{expression} printed {seen[0]!r}, not {expected!r}, "
                                 f"for {timeout} s") from None
        return seen[0]

    def restart_kernel(self) -> None:
        """Restarts the current notebook's kernel and waits for the restart; JupyterLab's
        own cancelled subshell request (see SUBSHELL_CANCELLED_ON_RESTART) is not counted
        as a console error."""
        # Forgiven until the notebooks close: the rejection reaches the test whenever the
        # page reports it, before or after the restart's own answer.
        self._kernel_restarted = True
        self.page.evaluate("async () => { await window.jupyterapp.shell.currentWidget"
                           ".sessionContext.session.kernel.restart(); }")

    def close_all(self) -> None:
        """Close every open document and shut its kernel down."""
        self.page.evaluate(_CLOSE_ALL_JS)
        self._kernel_restarted = False

    # --- look ----------------------------------------------------------------------

    def set_theme(self, dark: bool) -> None:
        theme = "JupyterLab Dark" if dark else "JupyterLab Light"
        self.page.evaluate("async (theme) => { await window.jupyterapp.commands.execute("
                           "'apputils:change-theme', { theme }); }", theme)
        self.page.wait_for_function("(light) => document.body.dataset.jpThemeLight === light",
                                    arg="false" if dark else "true")
        # Let the theme's CSS transitions settle before anyone takes a picture.
        self.wait_for_transitions()

    def wait_for_transitions(self, locator: Any | None = None) -> None:
        """Wait until style changes are applied and no CSS transition or finite CSS
        animation is running, in the page or under ``locator`` (two animation frames
        first: a transition starts at the next style recalculation). Endless animations
        (a streaming cursor, a spinner) do not count."""
        self.wait_for_frames()
        scope = None if locator is None else locator.element_handle()
        try:
            self.page.wait_for_function(_SETTLED_JS, arg=scope, polling="raf")
        finally:
            if scope is not None:
                scope.dispose()

    def wait_for_frames(self) -> None:
        """Two animation frames: what the page changed has been laid out and painted."""
        self.page.evaluate(_TWO_FRAMES_JS)

    def set_left_area(self, *, collapsed: bool) -> None:
        """Collapse or expand JupyterLab's left area and wait for the layout to follow."""
        self.page.evaluate("(collapsed) => collapsed ? window.jupyterapp.shell.collapseLeft()"
                           " : window.jupyterapp.shell.expandLeft()", collapsed)
        self.page.wait_for_function("(collapsed) => window.jupyterapp.shell.leftCollapsed"
                                    " === collapsed", arg=collapsed)
        self.wait_for_transitions()

    def set_viewport_size(self, size: dict[str, int]) -> None:
        """Resize the tab and wait until JupyterLab's shell has been laid out for it."""
        self.page.set_viewport_size(size)
        self.page.wait_for_function(_SHELL_FITS_WINDOW_JS, arg=[size["width"], size["height"]],
                                    polling="raf")
        self.wait_for_transitions()

    # --- inert content -------------------------------------------------------------

    def active_content(self, selector: str) -> dict[str, int]:
        """Counts of what could run under every element matching ``selector``: ``roots``
        (how many matched), ``scripts``, ``frames`` (iframe, frame, object, embed),
        ``handlers`` (``on*`` attributes) and ``js_urls`` (``javascript:`` in any
        attribute)."""
        return dict(self.page.evaluate(_ACTIVE_CONTENT_JS, selector))

    def wait_for_handlers_to_have_run(self, selector: str) -> None:
        """Wait until anything injected under ``selector`` has had its chance to run:
        every image there has loaded or failed (which fires ``load``/``error``), then two
        animation frames (an ``onload`` or a queued task has run by then)."""
        self.page.wait_for_function(_IMAGES_DONE_JS, arg=selector, polling="raf")
        self.wait_for_frames()

    def screenshot(self, locator: Any, path: Path, *, padding: int = 12) -> Path:
        """A PNG of ``locator`` with some of the page around it."""
        box = None
        for _attempt in range(3):
            # An output JupyterLab is re-attaching (a theme change can re-render one) is
            # briefly not in the layout: wait until it is, then measure it where it lies.
            locator.wait_for(state="visible", timeout=15_000)
            # Centre it, so neither the toolbar nor the status bar gets into the picture.
            locator.evaluate("node => node.scrollIntoView({block: 'center'})")
            self.wait_for_frames()  # scrolled and painted
            box = locator.bounding_box()
            if box is not None:
                break
        if box is None:
            raise AssertionError(f"cannot screenshot an invisible element: {locator}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), clip={
            "x": max(0, box["x"] - padding), "y": max(0, box["y"] - padding),
            "width": box["width"] + 2 * padding, "height": box["height"] + 2 * padding,
        }, animations="disabled")
        return path

    def screenshot_themes(self, locator: Any, directory: Path, name: str) -> list[Path]:
        """``<name>-light.png`` and ``<name>-dark.png`` of ``locator`` in ``directory``
        (see :meth:`screenshot`), the light theme set again after."""
        paths = []
        for theme in ("light", "dark"):
            self.set_theme(dark=theme == "dark")
            paths.append(self.screenshot(locator, directory / f"{name}-{theme}.png"))
        self.set_theme(dark=False)
        return paths

    def close(self) -> None:
        self.page.close()
