"""A chat notebook served as an app with Voila (docs/saved-notebooks.md, "Serve a chat as an
app"): the page shows the chat view while the turn streams, and the answer grows in place
until the turn ends, because the notebook starts the turn with ``session.start`` (a task: the
cell returns at once, Voila sends the page, the widget's batches follow)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from ..support.offline import clear_provider_environment, write_kernel_guard
from ..support.ports import free_port
from ..support.timing import poll_until

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]

# What the README shows, with a slower scripted model so the streaming can be watched.
APP_CELLS = [
    "from neta_nb import Agent, AgentSession, ScriptedProvider\n"
    "from neta_nb.widgets import ChatView\n"
    "session = AgentSession(Agent('analyst', model=ScriptedProvider(chars_per_second=400)),\n"
    f"                       working_dir={str(ROOT / 'notebooks' / 'data')!r})\n"
    "chat = ChatView(session, height='520px')\n"
    "chat",
    "task = session.start('Profile the sample sales data and tell me what stands out.')",
]


@pytest.fixture
def voila_app(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("voila", reason="voila is in the test extra: pip install -e '.[test]'")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in APP_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, tmp_path / "app.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    dirs = {name: tmp_path / name for name in ("config", "runtime", "data", "ipython")}
    for path in dirs.values():
        path.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_DIR": str(dirs["config"]),
           "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]), "IPYTHONDIR": str(dirs["ipython"]),
           "JUPYTER_PLATFORM_DIRS": "1"}
    clear_provider_environment(env)
    write_kernel_guard(dirs["ipython"])
    log = (tmp_path / "voila.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "voila", "app.ipynb", "--no-browser", f"--port={port}",
         "--Voila.ip=127.0.0.1", f"--token={token}", "--show_tracebacks=True"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    url = f"http://127.0.0.1:{port}/?token={token}"

    def answers() -> bool:
        # Listening is enough (a GET of the page would run the notebook once more).
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    try:
        poll_until(answers, 60, "voila to answer")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        print((tmp_path / "voila.log").read_text()[-3000:])


def test_a_chat_served_by_voila_streams_its_turn_live(voila_app: str, lab_session: object,
                                                      screenshot_dir: Path) -> None:
    page = lab_session.page.context.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(voila_app, wait_until="domcontentloaded", timeout=120_000)
        view = page.locator(".neta-chat-view")
        view.wait_for(timeout=120_000)
        # The answer is still streaming when the page shows it, and grows in place.
        live = view.locator(".neta-is-live .neta-chat-text")
        live.wait_for(timeout=60_000)
        first = len(live.text_content() or "")
        poll_until(lambda: live.count() == 0 or len(live.text_content() or "") > first, 60,
                   "the streamed answer to grow")
        view.locator(".neta-tool-card").first.wait_for(timeout=60_000)
        final = view.locator(".neta-chat-text", has_text="2 tool calls, 0 failed")
        final.wait_for(timeout=120_000)
        view.locator(".neta-is-live").wait_for(state="detached", timeout=30_000)  # turn over
        # The static form after the view is not shown beside it.
        assert page.locator(".jp-OutputArea-child:has(.neta-static-form)").first.is_hidden()
        page.set_viewport_size({"width": 1100, "height": 900})
        view.screenshot(path=str(screenshot_dir / "voila-chat.png"))
        assert not errors, errors
    finally:
        page.close()
