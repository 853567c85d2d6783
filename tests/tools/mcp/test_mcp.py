"""MCP servers in the catalog, against real server processes the tests start:
``mcp-server-time`` (from the registry) over stdio, the SDK-built test server
(``tests/support/mcp_test_server.py``) over stdio and streamable HTTP, and the reference
``@modelcontextprotocol/server-everything`` (npm, locked in ``tests/fixtures``)."""

from __future__ import annotations

import asyncio
import importlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

from neta_nb import Agent, AgentSession, AgentToolConfig, ToolCatalog, ToolContext, resolve_tools
from neta_nb.process_exit import watchdog_pid
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.tools.mcp.mcp import MCPServerError, MCPTool, MCPToolError, ServerStatus

from ...providers.sse_server import AnthropicStream, SSEServer
from ...support.ports import free_port
from ...support.sessions import FakeProvider, Recorder, answer, calls
from ...support.timing import wait_until

TEST_SERVER = Path(__file__).parents[2] / "support" / "mcp_test_server.py"
EVERYTHING = (Path(__file__).parents[2] / "fixtures" / "mcp_everything" / "node_modules"
              / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js")


def _children() -> set[int]:
    """This process's descendants, but the watchdog that outlives every server (started
    with the first one, neta_nb.process_exit)."""
    return {child.pid for child in psutil.Process().children(recursive=True)} - {
        watchdog_pid()}


async def _add_test_server(catalog: ToolCatalog, name: str = "t", **options: Any) -> Any:
    return await catalog.add_mcp_server(name, command=sys.executable,
                                        args=[str(TEST_SERVER), "stdio"], **options)


@pytest.fixture
def catalog(default_catalog: ToolCatalog) -> ToolCatalog:
    return default_catalog


def _context(progress: list[tuple[float, str | None]] | None = None) -> ToolContext:
    return ToolContext(on_progress=None if progress is None
                       else lambda percent, step, _detail: progress.append((percent, step)))


# --- contract ---------------------------------------------------------------------------

async def test_time_server_over_stdio_registers_its_tools_with_their_schemas(
        catalog: ToolCatalog) -> None:
    server = await catalog.add_mcp_server(
        "time", command=sys.executable, args=["-m", "mcp_server_time",
                                              "--local-timezone", "UTC"])
    assert server.status is ServerStatus.CONNECTED
    assert server.tool_names == ["time__get_current_time", "time__convert_time"]
    current = catalog["time__get_current_time"]
    assert isinstance(current, MCPTool)
    assert current.category == "time" and current.visibility == "tool"
    assert current.label == "Get current time"  # the server's name, readable
    assert current.parameters["required"] == ["timezone"]
    assert "IANA timezone" in current.parameters["properties"]["timezone"]["description"]
    assert current.definition().parameters == current.parameters
    answered = json.loads(await current.invoke({"timezone": "Asia/Tokyo"}, _context()))
    assert answered["timezone"] == "Asia/Tokyo" and answered["datetime"].endswith("+09:00")


async def test_an_agent_on_the_sse_server_calls_the_time_server_and_the_model_reads_the_result(
        catalog: ToolCatalog) -> None:
    await catalog.add_mcp_server("time", command=sys.executable,
                                 args=["-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with SSEServer() as sse:
        sse.add(AnthropicStream().tool_use("toolu_1", "time__convert_time", [
            '{"source_timezone": "UTC", "time": "12:00", ', '"target_timezone": "Asia/Tokyo"}'])
            .finish("tool_use").response(),
            AnthropicStream().text(["It is 21:00 in Tokyo."]).finish().response())
        provider = AnthropicProvider("claude-sonnet-4-20250514", api_key="test-key",
                                     base_url=sse.base_url, max_retries=0)
        config = AgentToolConfig(enabled=["time__get_current_time", "time__convert_time"])
        session = AgentSession(Agent("a", model=provider, tools=config), catalog)
        await session.run("Noon UTC in Tokyo?")
        first, second = (request.json for request in sse.requests)
    sent = {t["name"]: t for t in first["tools"]}
    assert sent["time__convert_time"]["input_schema"]["required"] == [
        "source_timezone", "time", "target_timezone"]
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert json.loads(result["content"] if isinstance(result["content"], str)
                      else result["content"][0]["text"])["target"]["datetime"].endswith(
                          "T21:00:00+09:00")


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TEST_SERVER), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("the streamable HTTP test server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_sdk_server_over_streamable_http(catalog: ToolCatalog, http_server: str) -> None:
    server = await catalog.add_mcp_server("web", url=http_server, category="remote",
                                          headers={"Authorization": "Bearer secret"})
    assert "web__echo" in server.tool_names
    assert catalog["web__echo"].category == "remote"
    assert await catalog["web__echo"].invoke({"text": "über"}, _context()) == "über"
    described = server.describe()
    assert described["url"] == http_server and "secret" not in json.dumps(described)


async def test_bad_names_and_parameters_are_refused_clearly(catalog: ToolCatalog) -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        await catalog.add_mcp_server("my server", command="x")
    with pytest.raises(ValueError, match="without '__'"):
        await catalog.add_mcp_server("a__b", command="x")
    with pytest.raises(ValueError, match="exactly one of command"):
        await catalog.add_mcp_server("both", command="x", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match="visibility must be"):
        await catalog.add_mcp_server(  # an invalid visibility on purpose
            "vis", command="x", visibility={"echo": "skil"})  # type: ignore[dict-item]
    with pytest.raises(MCPServerError, match="'missing' failed to start"):
        await catalog.add_mcp_server("missing", command="/nonexistent/neta-mcp-server")
    assert "missing" not in catalog.mcp_servers
    server = await _add_test_server(catalog)
    import mcp_types

    server._apply([mcp_types.Tool(name="has.dot", input_schema={"type": "object"}),
                   mcp_types.Tool(name="x" * 70, input_schema={"type": "object"}),
                   mcp_types.Tool(name="echo", input_schema={"type": "object"})])
    assert "not a valid tool name" in server.refused["has.dot"]
    assert "not a valid tool name" in server.refused["x" * 70]
    assert server.tool_names == ["t__echo"] and "t__count" not in catalog
    with pytest.raises(ValueError, match="already in this catalog"):
        await _add_test_server(catalog)


async def test_arguments_are_checked_against_the_servers_schema(catalog: ToolCatalog) -> None:
    await _add_test_server(catalog)
    from neta_nb.tools import ToolArgumentError

    with pytest.raises(ToolArgumentError, match="steps"):
        await catalog["t__count"].invoke({"steps": "three"}, _context())


async def test_without_the_sdk_the_import_error_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "neta_nb.tools.mcp.mcp_connection")
    monkeypatch.delitem(sys.modules, "neta_nb.tools.mcp.mcp")
    with pytest.raises(ImportError, match=r"pip install 'neta-nb\[mcp\]'"):
        await ToolCatalog().add_mcp_server("x", command="never-started")
    monkeypatch.undo()
    importlib.import_module("neta_nb.tools.mcp.mcp")


# --- same rules as every tool --------------------------------------------------------------

async def test_a_disabled_mcp_tool_is_never_sent_nor_called(catalog: ToolCatalog,
                                                             tmp_path: Path) -> None:
    await _add_test_server(catalog)
    catalog.disable("t__wait")
    marker = tmp_path / "marker"
    provider = FakeProvider([calls(("c1", "t__wait", {"marker": str(marker)})),
                             answer("ok")])
    config = AgentToolConfig(enabled=["t__wait", "t__echo"])
    session = AgentSession(Agent("a", model=provider, tools=config), catalog)
    await session.run("go")
    assert [t.name for t in provider.requests[0].tools if t.name.startswith("t__")] == [
        "t__echo"]
    result = session.messages[-2].tool_results[0]
    assert result.is_error and "disabled globally" in result.content
    assert not marker.exists()  # the server never saw the call


async def test_approval_per_tool_and_visibility_per_tool(catalog: ToolCatalog) -> None:
    await _add_test_server(catalog, requires_approval=["echo"],
                           visibility={"count": "skill"})
    assert catalog["t__echo"].requires_approval and not catalog["t__count"].requires_approval
    assert catalog["t__count"].visibility == "skill" and catalog["t__echo"].visibility == "tool"
    resolution = resolve_tools(catalog, AgentToolConfig(enabled=["t__echo"]))
    assert "t__echo" in resolution.names and "t__count" not in resolution.names


# --- progress ----------------------------------------------------------------------------

@pytest.mark.parametrize("visibility", [None, "skill"])
async def test_progress_of_a_call_becomes_a_skill_card(catalog: ToolCatalog,
                                                       visibility: str | None) -> None:
    # Default visibility is "tool": the card starts as a tool card and becomes a skill
    # card (same id, same place) at the server's first progress notification.
    await _add_test_server(catalog, visibility=visibility)
    provider = FakeProvider([calls(("c1", "t__count", {"steps": 4})), answer("done")])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=["t__count"])), catalog)
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("count")
    kinds = [e.type for e in recorder.events
             if e.type in ("tool_call", "skill_start", "progress", "skill_end",
                           "tool_result")]
    first = ["tool_call"] if visibility is None else []
    assert kinds == [*first, "skill_start", "progress", "progress", "progress", "progress",
                     "skill_end"]
    assert {e.id for e in recorder.events if hasattr(e, "id")} == {"c1"}
    assert [e.percent for e in recorder.of("progress")] == [25.0, 50.0, 75.0, 100.0]
    assert recorder.of("progress")[0].step == "step 1 of 4"
    assert recorder.of("skill_end")[0].status == "done"
    assert recorder.of("skill_end")[0].result == "counted to 4"
    stored = session.messages[1].metadata
    assert stored.tool_executions == []
    assert [(s.id, s.status, s.percent) for s in stored.skill_executions] == [
        ("c1", "done", 100.0)]


@pytest.mark.skipif(not EVERYTHING.exists() or shutil.which("node") is None,
                    reason="run `npm ci` in tests/fixtures/mcp_everything first")
async def test_server_everything_long_running_operation_reports_increasing_progress(
        catalog: ToolCatalog) -> None:
    # Default visibility: the server's progress notifications alone make the skill card.
    server = await catalog.add_mcp_server("everything", command="node",
                                          args=[str(EVERYTHING), "stdio"])
    long_running = next(name for name in server.tool_names if "long" in name.lower())
    assert catalog[long_running].visibility == "tool"
    provider = FakeProvider([calls(("c1", long_running, {"duration": 1, "steps": 4})),
                             answer("done")])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=[long_running])), catalog)
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("go")
    percents = [e.percent for e in recorder.of("progress")]
    assert percents == sorted(percents) and len(set(percents)) >= 3 and percents[-1] == 100.0
    assert [e.id for e in recorder.of("skill_start")] == ["c1"]
    assert recorder.of("skill_end")[0].status == "done"
    [skill] = session.messages[1].metadata.skill_executions
    assert skill.status == "done" and skill.percent == 100.0


# --- failures ----------------------------------------------------------------------------

async def _wait_for_file(path: Path, text: str) -> None:
    await wait_until(lambda: path.exists() and path.read_text() == text, within=20, interval=0.02)


async def test_a_server_killed_mid_call_fails_the_call_and_restarts_on_the_next(
        catalog: ToolCatalog, tmp_path: Path) -> None:
    server = await _add_test_server(catalog)
    first_pid = server.connection.pid
    assert first_pid is not None
    marker = tmp_path / "marker"
    call = asyncio.ensure_future(catalog["t__wait"].invoke({"marker": str(marker)}, _context()))
    await _wait_for_file(marker, "started")
    psutil.Process(first_pid).kill()
    with pytest.raises(MCPServerError, match="'t' stopped during the call") as failure:
        await call
    assert failure.value.server == "t"
    assert server.status is ServerStatus.FAILED
    assert await catalog["t__echo"].invoke({"text": "back"}, _context()) == "back"
    status: ServerStatus = server.status  # as read now, not narrowed to FAILED by the above
    assert status is ServerStatus.CONNECTED and server.connection.starts == 2
    assert server.connection.pid not in (None, first_pid)


async def test_a_server_that_keeps_failing_is_retried_with_backoff(catalog: ToolCatalog,
                                                                   tmp_path: Path) -> None:
    script = tmp_path / "flaky.py"
    script.write_text(f"import runpy, sys\nsys.argv = ['s', 'stdio']\n"
                      f"runpy.run_path({str(TEST_SERVER)!r}, run_name='__main__')\n")
    server = await catalog.add_mcp_server("flaky", command=sys.executable, args=[str(script)])
    script.write_text("import sys\nsys.stderr.write('no licence found')\nsys.exit(3)\n")
    psutil.Process(server.connection.pid).kill()
    await wait_until(lambda: server.status is ServerStatus.FAILED,
                     within=20, interval=0.02)  # noticed between calls
    with pytest.raises(MCPServerError, match=r"failed to start.*no licence found"):
        await catalog["flaky__echo"].invoke({"text": "x"}, _context())
    with pytest.raises(MCPServerError, match="next attempt to start it is in"):
        await catalog["flaky__echo"].invoke({"text": "x"}, _context())
    assert server.status is ServerStatus.FAILED and "no licence found" in (server.reason or "")


async def test_cancelling_a_call_cancels_it_on_the_server(catalog: ToolCatalog,
                                                          tmp_path: Path) -> None:
    await _add_test_server(catalog)
    marker = tmp_path / "marker"
    provider = FakeProvider([calls(("c1", "t__wait", {"marker": str(marker)}))])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=["t__wait"])), catalog)
    session.start("wait")
    await _wait_for_file(marker, "started")
    assert session.cancel()
    await _wait_for_file(marker, "cancelled")
    assert await catalog["t__echo"].invoke({"text": "still"}, _context()) == "still"


async def test_list_changed_updates_the_catalog_and_its_subscribers(catalog: ToolCatalog
                                                                    ) -> None:
    await _add_test_server(catalog)
    changed = asyncio.Event()
    catalog.subscribe(lambda c: changed.set() if "t__later" in c else None)
    await catalog["t__add_tool"].invoke({}, _context())
    async with asyncio.timeout(20):
        await changed.wait()
    assert await catalog["t__later"].invoke({}, _context()) == "later"


# --- untrusted input ---------------------------------------------------------------------

async def test_a_description_that_changes_after_listing_suspends_the_tool_until_acknowledged(
        catalog: ToolCatalog) -> None:
    server = await _add_test_server(catalog)
    config = AgentToolConfig(enabled=["t__shifty"])
    assert "t__shifty" in resolve_tools(catalog, config).names
    assert catalog["t__shifty"].description.startswith("<img src=x onerror=")
    await catalog["t__change_description"].invoke({}, _context())
    await wait_until(lambda: "t__shifty" in server.changed_tools, within=20, interval=0.02)
    notice = server.changed_tools["t__shifty"]
    assert notice.old_description.startswith("<img") and "ssh" in notice.new_description
    suspended = resolve_tools(catalog, config)
    assert "t__shifty" not in suspended.names
    assert server.describe()["changed"] == ["t__shifty"]
    # Its own reason, not "disabled globally": the panel row and the model's refusal say
    # what happened and what to do, in the user's language.
    assert catalog.suspended == {"t__shifty": "t"}
    reason = suspended.reasons["t__shifty"]
    assert reason.code == "mcp_changed" and "server 't' changed its description" in reason
    assert "修改了此工具的描述" in reason.text("zh-CN")
    assert "until the user reviews it" in suspended.refusal("t__shifty")
    assert suspended.steps[0].reasons["t__shifty"] == reason
    # A tool the user disabled by hand keeps the plain reason.
    catalog.disable("t__echo")
    assert resolve_tools(catalog, config).reasons["t__echo"].code == "globally_disabled"
    catalog.acknowledge_mcp_change("t__shifty")
    assert "t__shifty" in resolve_tools(catalog, config).names
    assert not server.changed_tools and catalog.suspended == {}


async def test_server_errors_reach_the_model_as_error_results(catalog: ToolCatalog) -> None:
    await _add_test_server(catalog)
    provider = FakeProvider([calls(("c1", "t__count", {"steps": "two"})),
                             answer("ok")])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=["t__count"])), catalog)
    await session.run("go")
    result = session.messages[-2].tool_results[0]
    assert result.is_error and "steps" in result.content  # our schema check, before the call
    with pytest.raises(MCPToolError, match="later"):
        await _raise_server_error(catalog)


async def _raise_server_error(catalog: ToolCatalog) -> None:
    """A tool the server knows no more: the server answers with an error result."""
    tool = catalog["t__echo"]
    assert isinstance(tool, MCPTool)
    ghost = MCPTool(name="t__later", description="", handler=tool.handler,
                    parameters={"type": "object"}, server="t", remote_name="later",
                    connection=tool.connection)
    await ghost.invoke({}, _context())


# --- lifetime ----------------------------------------------------------------------------

async def test_a_server_starts_once_and_leaves_no_process_after_removal(
        catalog: ToolCatalog) -> None:
    before = _children()
    server = await _add_test_server(catalog)
    for text in ("a", "b", "c"):
        await catalog["t__echo"].invoke({"text": text}, _context())
    assert server.connection.starts == 1
    pid = server.connection.pid
    assert pid in _children() - before
    await catalog.remove_mcp_server("t")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert _children() - before == set()
    assert not any(name.startswith("t__") for name in catalog.names)
    with pytest.raises(KeyError, match="no MCP server named 't'"):
        await catalog.remove_mcp_server("t")


async def test_removing_a_server_ends_its_calls_in_flight(catalog: ToolCatalog,
                                                          tmp_path: Path) -> None:
    server = await _add_test_server(catalog)
    marker = tmp_path / "marker"
    tool = catalog["t__wait"]
    call = asyncio.ensure_future(tool.invoke({"marker": str(marker)}, _context()))
    await _wait_for_file(marker, "started")
    await catalog.remove_mcp_server("t")
    with pytest.raises(MCPServerError, match="'t' stopped during the call: it was removed"):
        await call
    assert server.status is ServerStatus.CLOSED
    with pytest.raises(MCPServerError, match="was removed from the catalog"):
        await tool.invoke({"marker": str(marker)}, _context())


def test_servers_still_running_at_interpreter_exit_are_ended(tmp_path: Path) -> None:
    script = tmp_path / "leave.py"
    script.write_text(
        "import asyncio, sys\n"
        "from neta_nb.tools import ToolCatalog\n"
        "async def main():\n"
        "    catalog = ToolCatalog()\n"
        "    s = await catalog.add_mcp_server('t', command=sys.executable,\n"
        f"                                     args=[{str(TEST_SERVER)!r}, 'stdio'])\n"
        "    print(s.connection.pid, flush=True)\n"
        "loop = asyncio.new_event_loop()\n"
        "loop.run_until_complete(main())\n"
        "sys.exit(0)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[3])
    pid = int(done.stdout.split()[0])
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# --- persistence -------------------------------------------------------------------------

async def test_a_session_stores_its_servers_without_secrets_and_resume_brings_them_back(
        catalog: ToolCatalog, tmp_path: Path) -> None:
    from neta_nb import SessionStore

    await catalog.add_mcp_server("time", command=sys.executable,
                                 args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
                                 env={"TIME_TOKEN": "secret-value"}, visibility="skill")
    store = SessionStore(tmp_path / "sessions.db")
    config = AgentToolConfig(enabled=["time__get_current_time"])
    session = AgentSession(Agent("a", model=FakeProvider([answer("hi")]), tools=config),
                           catalog, store)
    await session.run("hello")
    assert session.flush(30)
    stored = store.get_session(session.id)
    assert stored is not None and [s["name"] for s in stored.mcp_servers] == ["time"]
    assert "secret-value" not in stored.model_dump_json()
    assert stored.mcp_servers[0]["tools"][0]["name"] == "get_current_time"

    fresh = ToolCatalog.default()
    try:
        resumed = AgentSession.resume(session.id, store, catalog=fresh)
        server = fresh.mcp_servers["time"]
        assert server.status is ServerStatus.NOT_STARTED and server.connection.pid is None
        assert "time__get_current_time" in resolve_tools(fresh, resumed.agent.tools).names
        assert fresh["time__get_current_time"].visibility == "skill"
        answered = await fresh["time__get_current_time"].invoke({"timezone": "UTC"},
                                                                _context())
        assert json.loads(answered)["timezone"] == "UTC"
        status: ServerStatus = server.status  # as read now, not narrowed to NOT_STARTED
        assert status is ServerStatus.CONNECTED and server.connection.starts == 1
    finally:
        for name in list(fresh.mcp_servers):
            await fresh.remove_mcp_server(name)
