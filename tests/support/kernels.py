"""Talking to a real ipykernel (the Kernel ▸ Interrupt tests; the ``kernel`` fixture of
``tests/runtime/conftest.py`` starts one): a session in it that streams a long answer,
one execution's messages and what it printed."""

from __future__ import annotations

from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient

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
