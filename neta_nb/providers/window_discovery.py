"""Asking an OpenAI-compatible server how large its context window is.

A local server runs a model with whatever window it was started with (llama.cpp's
``--ctx-size``, vLLM's ``--max-model-len``, Ollama's ``num_ctx``), so the model table
cannot know it. Each server family says it in its own place:

* llama.cpp's ``llama-server``: ``GET /props`` → ``default_generation_settings.n_ctx``
  (the window of one slot, which is what one request gets).
* vLLM: ``GET /v1/models`` → the served model's ``max_model_len``.
* Ollama: ``POST /api/show {"model": …}`` → ``num_ctx`` in ``parameters`` when the model
  sets it, else ``model_info["<architecture>.context_length"]``.

The three are asked at once, each with a short timeout, and the first family in that
order that answers with a number wins. Discovery never fails a session: a server that
answers none of them (llama-cpp-python exposes no window), answers with an error or
cannot be reached gives ``None``, and the caller keeps the table's figure, marked
assumed.

This module uses the HTTP client the ``openai`` SDK is built on, so it needs the
``openai`` extra like the provider that calls it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx2

__all__ = ["DISCOVERY_TIMEOUT", "DiscoveredWindow", "discover_context_window"]

DISCOVERY_TIMEOUT = 2.0
"""Seconds each endpoint may take. Short: a server that is slow to say its window must
not hold up the first answer, and the table's figure is a usable fallback."""

log = logging.getLogger(__name__)

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class DiscoveredWindow:
    tokens: int
    source: str
    """Where the figure came from, e.g. ``llama.cpp GET /props``."""


async def discover_context_window(base_url: str, model: str, *, api_key: str | None = None,
                                  probe_timeout: float = DISCOVERY_TIMEOUT,
                                  ) -> DiscoveredWindow | None:
    """The context window the server at ``base_url`` (its OpenAI-compatible ``…/v1``
    address) reports for ``model``, or ``None`` when it reports none. Each endpoint gets
    ``probe_timeout`` seconds; they are asked at once. Never raises for what the server
    does."""
    api = base_url.rstrip("/")
    root = api[:-3] if api.endswith("/v1") else api
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx2.AsyncClient(timeout=probe_timeout, headers=headers) as client:
        probes: list[tuple[str, Callable[[], Awaitable[int | None]]]] = [
            ("vLLM GET /v1/models", lambda: _vllm(client, api, model)),
            ("llama.cpp GET /props", lambda: _llama_server(client, root)),
            ("Ollama POST /api/show", lambda: _ollama(client, root, model)),
        ]
        answers = await asyncio.gather(*(_quietly(name, probe) for name, probe in probes))
    for (source, _probe), tokens in zip(probes, answers, strict=True):
        if tokens is not None:
            return DiscoveredWindow(tokens, source)
    return None


async def _quietly(name: str, probe: Callable[[], Awaitable[int | None]]) -> int | None:
    try:
        return await probe()
    except Exception as error:
        # Every server answers most of these probes with a 404 or not at all, and what a
        # server answers may have any shape: none of it may fail the session.
        log.debug("context window: %s gave no answer: %s", name, error)
        return None


async def _get_json(client: httpx2.AsyncClient, method: str, url: str,
                    body: dict[str, Any] | None = None) -> Any:
    response = await client.request(method, url, json=body)
    response.raise_for_status()
    return response.json()


async def _vllm(client: httpx2.AsyncClient, api: str, model: str) -> int | None:
    data = await _get_json(client, "GET", f"{api}/models")
    entries = [entry for entry in data.get("data") or () if isinstance(entry, dict)]
    chosen = next((e for e in entries if e.get("id") == model), None)
    if chosen is None and len(entries) == 1:
        chosen = entries[0]  # one model served under another name than asked for
    return _tokens(chosen.get("max_model_len")) if chosen is not None else None


async def _llama_server(client: httpx2.AsyncClient, root: str) -> int | None:
    data = await _get_json(client, "GET", f"{root}/props")
    settings = data.get("default_generation_settings")
    return _tokens(settings.get("n_ctx")) if isinstance(settings, dict) else None


async def _ollama(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    data = await _get_json(client, "POST", f"{root}/api/show", {"model": model})
    # A window set on the model (Modelfile or `ollama run … /set parameter`) is the one it
    # runs with; the architecture's context_length is the most it could take.
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        match = _NUM_CTX.search(parameters)
        if match:
            return _tokens(int(match.group(1)))
    info = data.get("model_info")
    if not isinstance(info, dict):
        return None
    architecture = info.get("general.architecture")
    return _tokens(info.get(f"{architecture}.context_length")) if architecture else None


def _tokens(value: object) -> int | None:
    """A positive whole number of tokens, else ``None`` (``bool`` is no number here)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
