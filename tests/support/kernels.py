"""A real ipykernel for the Kernel ▸ Interrupt tests: started and shut down around a
test, a session in it that streams a long answer, and what one execution printed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

STREAMING_SESSION = """
from pathlib import Path
from neta_nb import Agent, AgentSession, ScriptedProvider
session = AgentSession(Agent("a", model=ScriptedProvider(
    [[{{"text": "word " * 5000}}]], chars_per_second=400)))
marker = Path({marker!r})
session.subscribe(lambda event: event.type == "token" and marker.touch())
"""
"""Kernel code (to ``format`` with ``marker``): ``session`` streams a long answer slowly,
touching the file ``marker`` at its first token."""


@contextlib.contextmanager
def started_kernel() -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    """A python3 kernel and its client, shut down at the end."""
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def outputs(client: BlockingKernelClient, msg_id: str) -> list[dict[str, Any]]:
    """The iopub messages of one execution, until the kernel is idle again."""
    seen: list[dict[str, Any]] = []
    while True:
        message = client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if (message["msg_type"] == "status"
                and message["content"]["execution_state"] == "idle"):
            return seen
        seen.append(message)


def stdout(client: BlockingKernelClient, code: str) -> str:
    """What executing ``code`` printed."""
    return "".join(m["content"]["text"] for m in outputs(client, client.execute(code))
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
