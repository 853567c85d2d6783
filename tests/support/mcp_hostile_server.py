"""A misbehaving MCP server speaking raw JSON-RPC over stdio, for the hostile-server tests
(``tests/tools/mcp/test_mcp_hostile.py``). The SDK's own server cannot be made to break the
protocol, so this one writes the lines itself.

Run: ``python mcp_hostile_server.py MODE [ARG]``. Modes:

``silent``          reads its input and never answers, not even ``initialize``;
``hang_list``       answers ``initialize``, never answers ``tools/list``;
``garbage``         writes non-JSON lines (one of 1 MB) before every answer;
``tools``           lists the tools in the JSON file ARG (``[{name, description,
                    inputSchema}, …]``) and answers every call with ``ok``;
``many``            lists ARG tools (``tool_0`` …);
``results``         tools ``big`` (5 MB of text), ``image`` (a PNG block), ``fails``
                    (``isError``), ``binary`` (NUL and a lone surrogate), ``progress``
                    (odd progress notifications, some after its result) and ``flood`` (sends
                    ARG ``tools/list_changed`` notifications, then answers);
``deaf``            answers like ``results`` but keeps running when its input ends and
                    ignores SIGTERM (a server that would outlive its client);
``chatty``          writes ARG MB of noise to its stderr, then answers like ``results``;
``doomed``          writes ARG MB of noise and then its last words to its stderr, and exits;
``mute``            writes ARG MB of noise and then its last words to its stderr, and never
                    answers (like ``silent``).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
       "AAAABJRU5ErkJggg==")  # a 1x1 image, 72 bytes


def send(message: dict[str, Any]) -> None:
    if MODE == "garbage":
        sys.stdout.write("this is not JSON\n{\"jsonrpc\": \"2.0\", \"broken\n")
        sys.stdout.write("x" * 1_000_000 + "\n")
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any], result: dict[str, Any]) -> None:
    send({"id": request["id"], "result": result})


def text(value: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


def listed_tools() -> list[dict[str, Any]]:
    if MODE == "tools":
        with open(ARG, encoding="utf-8") as listing:
            return list(json.load(listing))
    if MODE == "many":
        return [{"name": f"tool_{n}", "description": f"Tool number {n}.",
                 "inputSchema": object_schema()} for n in range(int(ARG))]
    return [{"name": name, "description": f"The {name} tool.", "inputSchema": object_schema()}
            for name in ("echo", "big", "image", "fails", "binary", "progress", "flood")]


def call(request: dict[str, Any]) -> None:
    params = request.get("params") or {}
    name = params.get("name")
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "big":
        answer(request, text("0123456789" * 500_000))
    elif name == "image":
        answer(request, {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]})
    elif name == "fails":
        answer(request, text("the disk is full", is_error=True))
    elif name == "binary":
        # json.dumps writes the lone surrogate as the escape \\ud800, which is valid JSON.
        answer(request, text("nul:\x00 surrogate:\ud800 end"))
    elif name == "progress":
        def progress(value: float, total: float | None, message: str, tok: Any = token) -> None:
            params = {"progressToken": tok, "progress": value, "message": message}
            if total is not None:
                params["total"] = total
            send({"method": "notifications/progress", "params": params})

        progress(5, None, "no total")
        progress(80, 100, "eighty")
        progress(40, 100, "went back")
        progress(250, 100, "past the total")
        progress(1, 100, "someone else's", tok="not-a-token-of-this-call")
        progress(100, 100, "z" * 100_000)
        answer(request, text("progressed"))
        progress(99, 100, "after the result")
    elif name == "flood":
        for _ in range(int(ARG or 0)):
            send({"method": "notifications/tools/list_changed"})
        answer(request, text("flooded"))
    else:
        answer(request, text("ok"))


LAST_WORDS = "fatal: the licence server is unreachable"


def write_stderr_noise() -> None:
    megabyte = ("noise " * 15 + "\n") * (1_000_000 // 91)  # lines of 91 bytes
    for _ in range(int(ARG)):
        sys.stderr.write(megabyte)
    if MODE in ("doomed", "mute"):
        sys.stderr.write(LAST_WORDS + "\n")
    sys.stderr.flush()


def main() -> None:
    if MODE in ("chatty", "doomed", "mute"):
        write_stderr_noise()
        if MODE == "doomed":
            sys.exit(3)
    if MODE == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        if MODE not in ("silent", "mute"):
            respond(json.loads(line))
    if MODE == "deaf":
        while True:  # outlive the client
            time.sleep(1)


def respond(request: dict[str, Any]) -> None:
    method = request.get("method")
    if "id" not in request:
        return  # a notification (initialized, cancelled)
    if method == "initialize":
        answer(request, {"protocolVersion": request["params"]["protocolVersion"],
                         "capabilities": {"tools": {"listChanged": True}},
                         "serverInfo": {"name": "hostile", "version": "1"}})
    elif method == "tools/list":
        if MODE != "hang_list":
            answer(request, {"tools": listed_tools()})
    elif method == "tools/call":
        call(request)
    elif method == "ping":
        answer(request, {})
    else:
        send({"id": request["id"], "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
