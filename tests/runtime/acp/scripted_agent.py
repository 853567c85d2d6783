"""A scripted agent that speaks the Agent Client Protocol's JSON-RPC over stdio (no SDK, no
model): ``python scripted_agent.py SCRIPT.json``. The script is
``{"steps": [...], "stop_reason": "end_turn", "usage": {...} | null}``; each prompt plays
the steps in order:

* ``{"update": {...}}`` — a ``session/update`` notification with that update;
* ``{"permission": {"toolCall": {...}, "options": [...]}}`` — a
  ``session/request_permission`` request; the answer's outcome is written as a line to
  ``SCRIPT.json.answers``;
* ``{"sleep": seconds}``;
* ``{"mcp": {"server": name, "tool": name, "arguments": {...}}}`` — a call of that tool
  of an MCP server over HTTP it was given in ``session/new``, with the official ``mcp``
  client (the headers it was given); ``"tool": null`` lists the server's tools instead.
  What came back is written as a line to ``SCRIPT.json.mcp``: ``{"tools": [...]}``, or
  ``{"is_error": ..., "text": ...}``, or ``{"failed": "..."}``.

Then it answers the prompt with the stop reason and usage. ``session/cancel`` ends the
steps and answers ``cancelled``. ``"by_prompt": {text: steps}`` gives each prompt text
steps of its own. ``"can_load": true`` offers ``session/load``, which fails (the session
is unknown) unless ``"load_ok": true`` (then it goes on, and the session is continued);
``"mcp_http": true`` takes MCP servers over HTTP; ``"images": true`` takes images in a
prompt; ``"can_fork": true`` offers ``session/fork`` (the forked session's id is written
as a line to ``SCRIPT.json.forks``). Each prompt's blocks are written as a line to
``SCRIPT.json.prompts`` (its first block's text is the prompt ``by_prompt`` looks up).
Every method it is called
with is written as a line to ``SCRIPT.json.calls``, the parameters of ``session/new`` to
``SCRIPT.json.new``. ``"linger": true``: it does not end when its input does (as Codex's
native program); ``"child": true``: it starts a child process that outlives it unless
killed (its pid in ``SCRIPT.json.child``). ``"modes": {"currentModeId": ...,
"availableModes": [...]}`` is offered in ``session/new``'s answer; ``session/set_mode``
is refused for a mode in ``"refuse_modes"``, else answered and followed by a
``current_mode_update``. ``"commands": [...]`` are announced
(``available_commands_update``) right after ``session/new`` is answered.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

script_path = Path(sys.argv[1])
script = json.loads(script_path.read_text())
answers = script_path.with_suffix(".json.answers")
calls = script_path.with_suffix(".json.calls")
lock = threading.Lock()
waiting: dict[int, threading.Event] = {}
replies: dict[int, Any] = {}
cancelled = threading.Event()
servers: dict[str, dict[str, Any]] = {}
"""The MCP servers given in session/new (or session/load), by name."""
if script.get("child"):
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    script_path.with_suffix(".json.child").write_text(str(child.pid))


def send(message: dict[str, Any]) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def play(number: int, session_id: str, prompt: str) -> None:
    steps = script["by_prompt"][prompt] if "by_prompt" in script else script["steps"]
    for index, step in enumerate(steps):
        if cancelled.is_set():
            break
        if "update" in step:
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": session_id, "update": step["update"]}})
        elif "permission" in step:
            asked = 1000 + index
            waiting[asked] = threading.Event()
            send({"jsonrpc": "2.0", "id": asked, "method": "session/request_permission",
                  "params": {"sessionId": session_id, **step["permission"]}})
            waiting[asked].wait()
            with answers.open("a") as file:
                file.write(json.dumps(replies[asked].get("outcome")) + "\n")
        elif "sleep" in step:
            cancelled.wait(step["sleep"])
        elif "mcp" in step:
            with script_path.with_suffix(".json.mcp").open("a") as file:
                file.write(json.dumps(mcp_step(step["mcp"])) + "\n")
    result: dict[str, Any] = {"stopReason": "cancelled" if cancelled.is_set()
                              else script.get("stop_reason", "end_turn")}
    if script.get("usage"):
        result["usage"] = script["usage"]
    send({"jsonrpc": "2.0", "id": number, "result": result})


def mcp_step(step: dict[str, Any]) -> dict[str, Any]:
    import asyncio

    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    server = servers.get(step["server"])
    if server is None:
        return {"failed": f"no server {step['server']!r} was given"}
    headers = {header["name"]: header["value"] for header in server.get("headers", [])}

    async def call() -> dict[str, Any]:
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                streamable_http_client(server["url"], http_client=http) as (read, write, *_), \
                ClientSession(read, write) as client:
            await client.initialize()
            if step.get("tool") is None:
                listed = await client.list_tools()
                return {"tools": [tool.name for tool in listed.tools]}
            result = await client.call_tool(step["tool"], step.get("arguments", {}))
            return {"is_error": bool(result.is_error),
                    "text": "\n".join(getattr(item, "text", "") for item in result.content)}

    try:
        return asyncio.run(call())
    except BaseException as error:  # said to the test, which fails on it
        return {"failed": f"{type(error).__name__}: {error}"}


for line in sys.stdin:
    message = json.loads(line)
    method, number = message.get("method"), message.get("id")
    if method is not None:
        with calls.open("a") as file:
            file.write(method + "\n")
    if method is None and number in waiting:  # an answer to a permission request
        replies[number] = message.get("result") or {}
        waiting[number].set()
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": number, "result": {
            "protocolVersion": 1, "authMethods": [],
            "agentCapabilities": {"loadSession": bool(script.get("can_load")),
                                  "promptCapabilities": {"image": bool(script.get("images"))},
                                  "sessionCapabilities": (
                                      {"fork": {}} if script.get("can_fork") else {}),
                                  "mcpCapabilities": {"http": bool(script.get("mcp_http"))}}}})
    elif method == "session/fork":
        forks = script_path.with_suffix(".json.forks")
        with forks.open("a") as file:
            file.write(message["params"]["sessionId"] + "\n")
        send({"jsonrpc": "2.0", "id": number, "result": {
            "sessionId": f"fork-{len(forks.read_text().splitlines())}"}})
    elif method == "session/load":
        if script.get("load_ok"):
            send({"jsonrpc": "2.0", "id": number, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": number,
                  "error": {"code": -32002, "message": "Resource not found"}})
    elif method == "session/new":
        script_path.with_suffix(".json.new").write_text(json.dumps(message["params"]))
        servers.update({server["name"]: server for server in message["params"]["mcpServers"]})
        result: dict[str, Any] = {"sessionId": "scripted-1"}
        if script.get("modes"):
            result["modes"] = script["modes"]
        send({"jsonrpc": "2.0", "id": number, "result": result})
        if script.get("commands"):
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "scripted-1", "update": {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": script["commands"]}}})
    elif method == "session/set_mode":
        mode = message["params"]["modeId"]
        if mode in script.get("refuse_modes", []):
            send({"jsonrpc": "2.0", "id": number,
                  "error": {"code": -32603, "message": f"mode {mode} is not allowed now"}})
        else:
            send({"jsonrpc": "2.0", "id": number, "result": {}})
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": message["params"]["sessionId"], "update": {
                    "sessionUpdate": "current_mode_update", "currentModeId": mode}}})
    elif method == "session/prompt":
        cancelled.clear()
        params = message["params"]
        with script_path.with_suffix(".json.prompts").open("a") as file:
            file.write(json.dumps(params["prompt"]) + "\n")
        first = params["prompt"][0] if params["prompt"] else {}
        text = first.get("text", "")
        threading.Thread(target=play, args=(number, params["sessionId"], text),
                         daemon=True).start()
    elif method == "session/cancel":
        cancelled.set()
        time.sleep(0)

if script.get("linger"):
    threading.Event().wait(120)
