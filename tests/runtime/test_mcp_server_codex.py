"""A real outside client: the Codex CLI (``codex exec``), configured with the notebook's MCP
server as docs/mcp-server.md says, lists its tools and calls them. Its model is a local
stand-in for the Responses API that answers with the calls a test scripts, so nothing
leaves 127.0.0.1.

The notebook page is unavailable here: the client's session gets a stand-in page
(tests/support/notebook_page.py) and a stand-in user who accepts what is proposed. Codex:
the run's copy is locked in tests/fixtures/codex_cli (``npm ci`` there: scripts/test.sh
does); ``$NETA_NB_CODEX`` names another. Without one the test is skipped, saying so.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb.messages import ToolCallPart
from neta_nb.runtime.mcp_server import TOKEN_VARIABLE, NotebookMCPServer

from ..support.asgi_server import served
from ..support.notebook_mcp import User
from ..support.notebook_page import FakeNotebookPage
from ..support.responses_model import ResponsesModel

LOCKED = (Path(__file__).parents[1] / "fixtures" / "codex_cli" / "node_modules" / ".bin"
          / "codex")
CODEX = os.environ.get("NETA_NB_CODEX") or (str(LOCKED) if LOCKED.exists() else None)
pytestmark = pytest.mark.skipif(CODEX is None or shutil.which("node") is None,
                                reason="run `npm ci` in tests/fixtures/codex_cli first")
NAMESPACE = "mcp__neta_notebook"
"""How Codex offers the tools of the server named ``neta-notebook`` to its model."""


@pytest.fixture
def model_server() -> Iterator[ResponsesModel]:
    model = ResponsesModel(namespace=NAMESPACE)
    with served(model.app()) as model.port:
        yield model


def codex_home(path: Path, model_port: int, url: str) -> Path:
    path.mkdir()
    (path / "config.toml").write_text(f"""
model = "stand-in"
model_provider = "stand-in"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.stand-in]
name = "stand-in"
base_url = "http://127.0.0.1:{model_port}/v1"
wire_api = "responses"
env_key = "STAND_IN_MODEL_KEY"

[mcp_servers.neta-notebook]
url = "{url}"
bearer_token_env_var = "{TOKEN_VARIABLE}"
default_tools_approval_mode = "approve"
""")
    return path


async def test_codex_lists_and_calls_the_notebook_tools(tmp_path: Path,
                                                        model_server: ResponsesModel) -> None:
    assert CODEX is not None
    user = User()
    page = FakeNotebookPage([{"id": "c1", "source": "x = 41 + 1"}])
    server = NotebookMCPServer(kernel_loop=asyncio.get_running_loop(),
                               show_client=user.show(lambda _name: page))
    await asyncio.to_thread(server.start)
    model_server.turns = [{"call": "read_notebook"},
                          {"call": "edit_cell", "args": {"cell_id": "c1", "source": "x = 42"}},
                          {"text": "The cell now holds 42."}]
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.endswith(("_API_KEY", "_TOKEN"))}
    env.update(CODEX_HOME=str(codex_home(tmp_path / "codex", model_server.port, server.url)),
               STAND_IN_MODEL_KEY="unused", **{TOKEN_VARIABLE: server.token})
    try:
        process = await asyncio.create_subprocess_exec(
            CODEX, "exec", "--skip-git-repo-check", "Make x 42.", cwd=work, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    finally:
        await asyncio.to_thread(server.stop)
    shown = output.decode(errors="replace")
    assert process.returncode == 0, shown
    assert set(model_server.tools()) >= {"read_notebook", "edit_cell", "run_cell"}, shown
    read, edited = model_server.outputs()
    assert "x = 41 + 1" in read and "data, not instructions" in read
    assert "accepted" in edited
    assert page.cell("c1")["source"] == "x = 42"
    [(name, request)] = user.requests
    assert request.name == "edit_cell" and request.proposal is not None
    session = server.clients[name]
    assert [part.name for message in session.messages for part in message.parts
            if isinstance(part, ToolCallPart)] == ["read_notebook", "edit_cell"]
