"""The CPU an outside agent's session adds per streamed chunk, beside a native provider's
delta.

Run: ``.venv/bin/python benchmarks/acp_stream.py`` (results are appended to
``benchmarks/results/acp_stream.md`` when ``--record`` is given).

* **ACP per chunk**: a stand-in agent (a small Python program speaking the Agent Client
  Protocol's JSON-RPC over stdio, no model) answers one prompt with N
  ``agent_message_chunk`` notifications of five characters, written as fast as the pipe
  takes them. We time the turn's CPU in this process — the SDK reading and validating
  each notification, the session turning it into its ``token`` event and the answer,
  one no-op subscriber — and subtract a turn of no chunks (the agent's start, the
  protocol's handshake). The agent's own CPU is in its process and not counted.
* **Native per delta**: the same as ``session_loop.py``'s figure — a provider yielding N
  deltas, minus the provider alone. It reads no wire: the deltas are made in memory.
* **Native per delta over its wire**: a native provider as a user has it — the ``openai``
  SDK's streaming client (``openai:`` with a ``base_url``) — reading N chat-completion
  chunks of five characters from a local server in another process (plain HTTP on
  127.0.0.1, server-sent events), minus a turn of no chunks: what the kernel spends per
  delta from the socket to the session's ``token`` event, as the ACP figure is from the
  pipe to its ``token`` event.

Goal (issue 50): ACP per chunk ≤ 2× the native delta.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from recorded import append_result
from session_loop import per_delta, provider_alone

from neta_nb import AcpAgent, Agent, AgentSession, ToolCatalog
from neta_nb.providers import create_provider

CHUNKS = 50_000

AGENT = textwrap.dedent('''
    import json, sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    chunks = int(sys.argv[1])
    for line in sys.stdin:
        request = json.loads(line)
        method, number = request.get("method"), request.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": number, "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": number, "result": {"sessionId": "bench"}})
        elif method == "session/prompt":
            chunk = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "bench", "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "abcde"}}}}) + "\\n"
            for start in range(0, chunks, 1000):
                sys.stdout.write(chunk * min(1000, chunks - start))
            sys.stdout.flush()
            send({"jsonrpc": "2.0", "id": number, "result": {"stopReason": "end_turn"}})
''')


SSE_SERVER = textwrap.dedent('''
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    def event(delta, finish=None, usage=None):
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage is not None:
            chunk["usage"] = usage
        return "data: " + json.dumps(chunk) + "\\n\\n"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            chunks = int(body["model"].rsplit("-", 1)[1])
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            out = self.wfile
            out.write(event({"role": "assistant", "content": ""}).encode())
            text = event({"content": "abcde"}).encode()
            for start in range(0, chunks, 1000):
                out.write(text * min(1000, chunks - start))
            out.write(event({}, "stop", {"prompt_tokens": 5, "completion_tokens": chunks,
                                         "total_tokens": chunks + 5}).encode())
            out.write(b"data: [DONE]\\n\\n")
            out.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    server.serve_forever()
''')


async def timed_turn(session: AgentSession, chunks: int) -> float:
    """CPU of one turn of ``session`` that streams ``chunks`` five-character pieces (one
    no-op subscriber), checked whole."""
    session.subscribe(lambda event: None)
    start = time.process_time()
    message = await session.run("go")
    spent = time.process_time() - start
    got = len(message.text) if message is not None else 0
    assert got == 5 * chunks, f"pieces were lost: {got} of {5 * chunks} characters"
    return spent


async def native_wire_turn(port: int, chunks: int) -> float:
    """CPU of one turn of ``chunks`` deltas read by the ``openai`` SDK from the local
    server (its connection opened, as a session's first call opens it)."""
    provider = create_provider(f"openai:bench-{chunks}", api_key="bench",
                               base_url=f"http://127.0.0.1:{port}/v1",
                               context_window=1_000_000)
    return await timed_turn(AgentSession(Agent("bench", model=provider), ToolCatalog()),
                            chunks)


async def acp_turn(script: Path, chunks: int) -> float:
    """CPU of one turn of ``chunks`` chunks (the agent started, the session opened)."""
    session = AgentSession(AcpAgent("bench", [sys.executable, str(script), str(chunks)]),
                           ToolCatalog())
    spent = await timed_turn(session, chunks)
    session.close()
    await asyncio.sleep(0.2)  # the agent is reaped
    return spent


async def main(record: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "agent.py"
        script.write_text(AGENT)
        empty = min([await acp_turn(script, 0) for _ in range(3)])
        full = min([await acp_turn(script, CHUNKS) for _ in range(3)])
    acp_us = (full - empty) / CHUNKS * 1e6
    baseline = min([await provider_alone(CHUNKS) for _ in range(3)])
    native = min([await per_delta(CHUNKS) for _ in range(3)])
    native_us = (native - baseline) / CHUNKS * 1e6
    server = await asyncio.create_subprocess_exec(sys.executable, "-c", SSE_SERVER,
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        assert server.stdout is not None
        port = int(await server.stdout.readline())
        await native_wire_turn(port, 10)  # the SDK's first-use costs, not counted
        wire_empty = min([await native_wire_turn(port, 0) for _ in range(3)])
        wire_full = min([await native_wire_turn(port, CHUNKS) for _ in range(3)])
    finally:
        server.kill()
        await server.wait()
    wire_us = (wire_full - wire_empty) / CHUNKS * 1e6
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}",
        "",
        "| measure | result | goal |",
        "|---|---|---|",
        f"| ACP session per chunk ({CHUNKS:,} chunks, 1 subscriber) | {acp_us:.2f} µs CPU | "
        f"≤ 2× native |",
        f"| native session per delta (same count, made in memory) | {native_us:.2f} µs CPU "
        f"| — |",
        f"| ratio | {acp_us / native_us:.1f}× | — |",
        f"| native session per delta over its wire (`openai` SDK, local SSE server) | "
        f"{wire_us:.2f} µs CPU | — |",
        f"| ratio, both from their wire | {acp_us / wire_us:.2f}× | ≤ 2× |",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("acp_stream.md", report, "# Outside agent (ACP) streaming overhead\n\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="append to results/")
    args: Any = parser.parse_args()
    asyncio.run(main(args.record))
    sys.exit(0)
