"""The user setting that keeps inline completion off whatever a kernel says, in real
JupyterLab: with completion switched on from Python, unticking **Allow inline completion
from the kernel** in the Settings Editor stops the requests — none reaches the kernel,
none the model's server, no ghost text shows — and ticking it again brings the
suggestions back, without a reload or a new switch-on.

Its own JupyterLab server, started by tests/browser/test_inline_completion.py's
``own_servers``: kernels that import this checkout's ``neta_nb`` and this checkout's build
of the notebook bridge (``JUPYTER_PATH``); the setting is saved to that server's own
settings directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fim_server import FimServer, fim_server

from .harness import JupyterLabServer, LabSession
from .test_inline_completion import (
    GHOST,
    SETUP,
    edit,
    ghost_text,
    own_servers,
    sources,
    switch_on,
)

pytestmark = pytest.mark.browser

PLUGIN_ID = "neta-nb-notebook-bridge:inline-completion"
ALLOW = "Allow inline completion from the kernel"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    with own_servers(tmp_path_factory, {"lab": JupyterLabServer}) as started:
        yield started["lab"]


@pytest.fixture(scope="module")
def model() -> Iterator[FimServer]:
    with fim_server() as running:
        yield running


@pytest.fixture
def tab(server: JupyterLabServer, lab_session: LabSession) -> Iterator[LabSession]:
    # The test session's Chromium, a tab of its own on this file's server.
    page = LabSession(server, lab_session.page.context)
    try:
        yield page
        errors = [e.text for e in page.console_errors if e.type == "error"]
        assert not errors, errors
    finally:
        page.close_all()
        page.close()


def allow(tab: LabSession, allowed: bool, notebook: str) -> None:
    """Tick or untick the setting in the Settings Editor, as a user does, wait until it is
    saved, and go back to ``notebook``."""
    tab.page.evaluate("(query) => window.jupyterapp.commands.execute('settingeditor:open',"
                      " { query })", "neta_nb inline completion")
    box = tab.page.get_by_label(ALLOW, exact=True)
    box.wait_for(state="visible", timeout=30_000)
    box.set_checked(allowed)
    tab.page.wait_for_function(
        """async ([id, allowed]) => {
             const saved = await window.jupyterapp.serviceManager.settings.fetch(id);
             return (saved.settings?.enabled ?? true) === allowed;
           }""", arg=[PLUGIN_ID, allowed], timeout=15_000, polling=200)
    tab.page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open',"
                      " { path })", notebook)


def page_requests(tab: LabSession, path: str) -> int:
    """The requests the kernel heard from the page since the switch-on."""
    return int(tab.execute(path, "print(completion.requests)").strip())


def test_the_setting_keeps_completion_off_and_on_again(tab: LabSession,
                                                      model: FimServer) -> None:
    path = tab.run_notebook("inline_completion_setting.ipynb", SETUP)
    switch_on(tab, path, model)
    edit(tab, 1)
    tab.page.keyboard.type('df["re')
    assert ghost_text(tab) == 'venue"]'  # on: the kernel's suggestion shows
    tab.page.keyboard.press("Escape")
    asked = page_requests(tab, path)
    assert asked >= 1 and model.requests >= 1

    allow(tab, False, path)
    model.reset()
    edit(tab, 1)
    tab.page.keyboard.type('df["un', delay=40)
    tab.page.wait_for_timeout(1500)  # well past the 150 ms debounce
    assert not tab.page.locator(GHOST).is_visible()
    assert model.requests == 0
    assert page_requests(tab, path) == asked  # none reached the kernel either
    assert sources(tab, path)[1].endswith('df["un')

    allow(tab, True, path)
    edit(tab, 1)
    tab.page.keyboard.type('df["un')
    assert ghost_text(tab) == 'its"]'  # on again, from the same switch-on
    assert model.requests >= 1 and page_requests(tab, path) > asked
