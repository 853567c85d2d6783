"""AcpAgent's definition, its presets, and what a session does when the agent's process
fails: started on first use, a crash ends the turn with the agent's last words on stderr,
the next turn starts it again, and what it was given in its environment is never
stored. The failing agents are small Node.js scripts (no outside agent needed)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from neta_nb import AcpAgent, Agent, AgentSession, SessionNotResumableError, SessionStore
from neta_nb.events import Event
from neta_nb.runtime.acp import AgentNotInstalledError
from neta_nb.runtime.acp.turns import AcpTurns
from neta_nb.runtime.replay.replay import replay

from ...support.outside_agents import driven
from ...support.sessions import FakeProvider, answer

SCRIPTED = Path(__file__).with_name("scripted_agent.py")
needs_node = pytest.mark.skipif(shutil.which("node") is None and not os.environ.get("CI"),
                                reason="needs Node.js")


def test_command_must_be_a_list_of_strings() -> None:
    with pytest.raises(TypeError, match="non-empty list of strings"):
        AcpAgent("x", "claude-agent-acp")
    with pytest.raises(TypeError, match="non-empty list of strings"):
        AcpAgent("x", [])
    with pytest.raises(TypeError, match="env must map names to strings"):
        AcpAgent("x", ["a"], env={"KEY": 1})  # type: ignore[dict-item]


@pytest.mark.parametrize(("preset", "package", "reads"), [
    (AcpAgent.claude_code, "@zed-industries/claude-agent-acp@0.23.1", "ANTHROPIC_API_KEY"),
    (AcpAgent.codex, "@zed-industries/codex-acp@0.16.0", "OPENAI_API_KEY"),
    (AcpAgent.gemini, "@google/gemini-cli@0.61.0", "GEMINI_API_KEY"),
])
def test_a_preset_not_installed_says_how_to_install_it(preset: object, package: str,
                                                       reads: str, tmp_path: Path) -> None:
    with pytest.raises(AgentNotInstalledError) as raised:
        preset(search=tmp_path)  # type: ignore[operator]
    assert f"npm install -g {package}" in str(raised.value)
    assert reads in str(raised.value)


def test_a_preset_finds_its_program_and_gemini_speaks_acp(tmp_path: Path) -> None:
    program = tmp_path / "gemini"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    agent = AcpAgent.gemini(search=tmp_path)
    assert agent.command == [str(program), "--acp"]
    assert agent.name == "Gemini CLI"


def test_the_environment_is_never_shown_nor_stored(tmp_path: Path) -> None:
    agent = AcpAgent("secretive", ["node", "agent.js"], env={"ANTHROPIC_API_KEY": "sk-123"})
    assert "sk-123" not in repr(agent)
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(agent, store=store)
    assert session.flush(10)
    record = store.get_session(session.id)
    assert record is not None
    assert "sk-123" not in str(record.model_dump())
    assert record.agent["provider"]["command"] == ["node", "agent.js"]
    store.close()


CRASHING = ("process.stderr.write('starting\\nno API key found: set ANTHROPIC_API_KEY\\n');"
            "process.exit(3);")


@needs_node
async def test_a_crashed_agent_ends_the_turn_in_plain_words_and_starts_again() -> None:
    session = AgentSession(AcpAgent("broken", ["node", "-e", CRASHING]))
    events: list[Event] = []
    session.subscribe(events.append)
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    assert outside.pid is None  # not started before its first turn
    for _ in range(2):
        events.clear()
        assert await session.run("hello") is None
        [error] = [e for e in events if e.type == "error"]
        assert "broken stopped (exit status 3)" in error.message
        assert "no API key found: set ANTHROPIC_API_KEY" in error.message
        assert events[-1].type == "done"
        assert events[-1].stop_reason == "error"
        assert not session.running
    assert [m.role for m in session.messages] == ["user", "user"]
    await outside.aclose()


@needs_node
async def test_an_agent_that_cannot_start_says_so() -> None:
    session = AgentSession(AcpAgent("missing", ["/nonexistent/agent-acp"]))
    events: list[Event] = []
    session.subscribe(events.append)
    await session.run("hello")
    [error] = [e for e in events if e.type == "error"]
    assert "could not start '/nonexistent/agent-acp'" in error.message


class _Served:
    """What serve_notebook_mcp() returns, as far as an agent needs it."""

    url = "http://127.0.0.1:8765/mcp"
    token = "tok-notebook"


MCP_SERVERS = [{"name": "time", "command": "mcp-server-time", "args": ["--local-timezone",
                                                                      "UTC"],
                "env": {"TIME_KEY": "k-env"}},
               {"name": "docs", "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer s3cret"}},
               _Served()]


def test_mcp_servers_are_checked_and_never_shown(tmp_path: Path) -> None:
    for bad, problem in [({"url": "http://x"}, "needs a name"),
                         ({"name": "a"}, "a url or a command"),
                         ({"name": "a", "url": "ftp://x"}, "http"),
                         ({"name": "a", "command": "x", "cwd": "/"}, "unknown keys: cwd"),
                         ({"name": "a", "command": "x", "args": "y"}, "args is a list"),
                         (object(), "is no MCP server")]:
        with pytest.raises(TypeError, match=problem):
            AcpAgent("x", ["a"], mcp_servers=[bad])
    with pytest.raises(TypeError, match="repeated: a"):
        AcpAgent("x", ["a"], mcp_servers=[{"name": "a", "command": "x"},
                                         {"name": "a", "url": "http://y"}])
    agent = AcpAgent("x", ["a"], mcp_servers=MCP_SERVERS)
    shown = repr(agent.mcp_servers)
    assert "s3cret" not in shown and "k-env" not in shown and "tok-notebook" not in shown
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(agent, store=store)
    assert session.flush(10)
    record = store.get_session(session.id)
    assert record is not None
    dumped = str(record.model_dump())
    assert "s3cret" not in dumped and "k-env" not in dumped and "tok-notebook" not in dumped
    store.close()


@pytest.mark.parametrize("http", [True, False])
async def test_the_agent_is_given_its_mcp_servers(tmp_path: Path, http: bool) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [], "mcp_http": http}))
    agent = AcpAgent("served", [sys.executable, str(SCRIPTED), str(script)], cwd=tmp_path,
                     mcp_servers=MCP_SERVERS)
    session = AgentSession(agent)
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    given = json.loads((tmp_path / "script.json.new").read_text())["mcpServers"]
    stdio = {"name": "time", "command": "mcp-server-time",
             "args": ["--local-timezone", "UTC"], "env": [{"name": "TIME_KEY", "value": "k-env"}]}
    over_http = [{"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp",
                  "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
                 {"type": "http", "name": "neta-notebook", "url": "http://127.0.0.1:8765/mcp",
                  "headers": [{"name": "Authorization", "value": "Bearer tok-notebook"}]}]
    assert given == ([stdio, *over_http] if http else [stdio])
    warnings = [e.message for e in events if e.type == "warning"]
    assert warnings == ([] if http else [
        "served was not given the MCP server docs (the agent takes no MCP server over HTTP).",
        "served was not given the MCP server neta-notebook (the agent takes no MCP server "
        "over HTTP)."])


WITHOUT_WATCHDOG = """
import neta_nb.runtime.acp.process as process
process.end_with_this_process = lambda pid: None
"""

EXITING = """
import asyncio, sys
from pathlib import Path
from neta_nb import AcpAgent, AgentSession

async def started():
    script = Path(sys.argv[1])
    session = AgentSession(AcpAgent("lingering", [sys.executable, sys.argv[2], str(script)],
                                    cwd=script.parent))
    session.start("go")
    for _ in range(200):
        if session.deps.outside.pid is not None:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    return session.deps.outside.pid

# The loop is left as a dying kernel leaves it: the turn still running, nothing closed.
print(asyncio.new_event_loop().run_until_complete(started()), flush=True)
"""


@pytest.mark.parametrize("ending", ["exit", "SIGTERM", "SIGKILL"])
def test_the_process_that_started_an_agent_ends_it_when_it_exits(tmp_path: Path,
                                                                  ending: str) -> None:
    """A normal exit runs ``atexit``; SIGTERM (a kernel that did not stop when asked)
    skips it, and must end the agent all the same; SIGKILL (the out-of-memory killer, a
    kernel killed by its manager) runs nothing of the process at all: a watchdog ends the
    agent and what it started."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"sleep": 60}], "linger": True, "child": True}))
    program = tmp_path / "exiting.py"
    # For exit and SIGTERM the watchdog is left out, so that what ends the agent is the
    # process's own handler, not the watchdog (which would end it in every case).
    program.write_text((WITHOUT_WATCHDOG if ending != "SIGKILL" else "") + EXITING
                       + ("" if ending == "exit" else "\nimport time\ntime.sleep(60)\n"))
    root = Path(__file__).parents[3]
    starter = subprocess.Popen([sys.executable, str(program), str(script), str(SCRIPTED)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert starter.stdout is not None
    agent = int(starter.stdout.readline().split()[0])
    if ending != "exit":
        starter.send_signal(getattr(signal, ending))
    _, errors = starter.communicate(timeout=60)
    assert starter.returncode == (0 if ending == "exit" else -getattr(signal, ending)), errors
    child = int((tmp_path / "script.json.child").read_text())

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    # A SIGKILL sent is not yet a process gone, and the watchdog acts once it sees the pipe
    # close: either way a moment after the starter's end.
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in (agent, child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in (agent, child) if alive(pid)]  # the agent and what it started
    for pid in left:
        psutil.Process(pid).kill()
    assert not left, "these outlived the process that started the agent"


async def test_a_name_mapped_to_none_is_left_out_of_the_agents_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETA_NB_GONE", "here")
    monkeypatch.setenv("NETA_NB_KEPT", "kept")
    telling = ("import os, sys; sys.stderr.write(repr(os.environ.get('NETA_NB_GONE')) + ' ' "
               "+ os.environ['NETA_NB_KEPT'] + ' ' + os.environ['NETA_NB_ADDED'] + '\\n'); "
               "sys.exit(3)")
    session = AgentSession(AcpAgent("env", [sys.executable, "-c", telling],
                                    env={"NETA_NB_GONE": None, "NETA_NB_ADDED": "added"}))
    events: list[Event] = []
    session.subscribe(events.append)
    await session.run("go")
    [error] = [e for e in events if e.type == "error"]
    assert "None kept added" in error.message


async def test_a_stored_outside_session_replays_with_an_agent_given_and_says_so_without(
        tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}]}))
    store = SessionStore(tmp_path / "sessions.db")
    session = AgentSession(AcpAgent("scr", [sys.executable, str(SCRIPTED), str(script)]),
                           store=store)
    await session.run("hello")
    assert session.flush(10)
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    await outside.aclose()

    # Without an agent there is nothing to replay with: the command and keys are not stored.
    with pytest.raises(SessionNotResumableError, match=r"outside agent 'scr'.*agent=") as refused:
        await replay(session.id, store=store)
    assert "supplier" not in str(refused.value)
    # The outside agent again, or a model of the reader's.
    again = await replay(session.id, store=store,
                         agent=AcpAgent("scr", [sys.executable, str(SCRIPTED), str(script)]))
    assert [turn.after.answer for turn in again.turns] == ["hi"]
    model = await replay(session.id, store=store,
                         agent=Agent("native", model=FakeProvider([answer("Hello.")])))
    assert [(turn.prompt, turn.after.answer) for turn in model.turns] == [("hello", "Hello.")]
