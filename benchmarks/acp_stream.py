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
  deltas, minus the provider alone.

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

from neta_nb import AcpAgent, AgentSession, ToolCatalog

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


async def acp_turn(script: Path, chunks: int) -> float:
    """CPU of one turn of ``chunks`` chunks (the agent started, the session opened)."""
    session = AgentSession(AcpAgent("bench", [sys.executable, str(script), str(chunks)]),
                           ToolCatalog())
    session.subscribe(lambda event: None)
    start = time.process_time()
    message = await session.run("go")
    spent = time.process_time() - start
    got = len(message.text) if message is not None else 0
    assert got == 5 * chunks, f"chunks were lost: {got} of {5 * chunks} characters"
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
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}",
        "",
        "| measure | result | goal |",
        "|---|---|---|",
        f"| ACP session per chunk ({CHUNKS:,} chunks, 1 subscriber) | {acp_us:.2f} µs CPU | "
        f"≤ 2× native |",
        f"| native session per delta (same count) | {native_us:.2f} µs CPU | — |",
        f"| ratio | {acp_us / native_us:.1f}× | ≤ 2× |",
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
