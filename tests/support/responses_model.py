"""A local stand-in for the Responses API, as Codex streams it (Codex's model in the tests
that drive it: over ACP, and as a client of the notebook's MCP server): each request is
answered by the next of ``turns`` — ``{"call": name, "args": {...}}`` (a function call) or
``{"text": ...}`` (streamed in pieces), ``"Nothing more."`` once they run out — and every
request is kept."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["ResponsesModel"]


class ResponsesModel:
    """The stand-in (see the module); ``namespace``: the calls are of an MCP server's
    tools, which Codex offers its model under that name."""

    def __init__(self, turns: Sequence[dict[str, Any]] = (), *,
                 namespace: str | None = None) -> None:
        self.turns = list(turns)
        self.namespace = namespace
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        """Where it is served (set by whoever serves :meth:`app`)."""

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/responses", self.respond, methods=["POST"]),
            Route("/v1/models", lambda _r: JSONResponse({"object": "list", "data": []}))])

    async def respond(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = self.turns.pop(0) if self.turns else {"text": "Nothing more."}
        number = len(self.requests)
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": f"resp_{number}"}}]
        if "call" in turn:
            item: dict[str, Any] = {
                "type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                "name": turn["call"], "arguments": json.dumps(turn.get("args", {}))}
            if self.namespace is not None:
                item["namespace"] = self.namespace
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{number}",
                    "content": [{"type": "output_text", "text": turn["text"]}]}
            events += [{"type": "response.output_item.added", "output_index": 0,
                        "item": {**item, "content": []}}]
            events += [{"type": "response.output_text.delta", "item_id": item["id"],
                        "output_index": 0, "content_index": 0, "delta": piece}
                       for piece in re.findall(r"\S+\s*", turn["text"])]
        events += [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {
                "id": f"resp_{number}",
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}]

        async def stream() -> AsyncIterator[str]:
            for event in events:
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    def tools(self) -> list[str]:
        """The names of the namespace's tools in Codex's first request."""
        for tool in self.requests[0].get("tools", []):
            if tool.get("name") == self.namespace:
                return [str(inner["name"]) for inner in tool.get("tools", [])]
        return []

    def outputs(self) -> list[str]:
        """The text of every tool result Codex sent back to its model, in order."""
        last = self.requests[-1].get("input", [])
        return ["\n".join(part.get("text", "") for part in item.get("output", []))
                if isinstance(item.get("output"), list) else str(item.get("output"))
                for item in last if item.get("type") == "function_call_output"]
