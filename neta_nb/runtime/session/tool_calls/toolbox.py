"""Toolbox: a session's tools as its model sees them now — the prompt preview, the
resolution the tool runner re-checks calls against (cached: ResolutionCache), and the
context each call runs with."""

from __future__ import annotations

import dataclasses

from ....messages import ToolCallPart
from ....tools import PromptPreview, ToolContext, preview_prompt, resolve_tools
from ....tools.base import ProgressCallback
from ....tools.resolution.resolution_cache import ResolutionCache
from ....tools.resolution.resolver import ToolResolution
from ..state import SessionState
from ..workspace import Workspace
from .subagents import Crew

__all__ = ["Toolbox"]


class Toolbox:
    """The tools of one session (see the module's docstring)."""

    def __init__(self, state: SessionState, workspace: Workspace, crew: Crew) -> None:
        self._state = state
        self._workspace = workspace
        self._crew = crew

    def preview(self) -> PromptPreview:
        """The system prompt and tool definitions the next model call will send — the
        same computation the loop uses, so preview and runtime cannot disagree."""
        place, crew = self._workspace, self._crew
        agent = place.agent
        preview = preview_prompt(system_prompt=agent.system_prompt, catalog=place.catalog,
                                 config=agent.tools,
                                 model_capabilities=place.provider.info.capabilities,
                                 scene=agent.scene, delegates=crew.can_delegate,
                                 notebook_page=place.page_answers)
        if "delegate" not in preview.resolution:
            return preview
        # `delegate` as this agent's model sees it: its own sub-agents by name.
        tools = [crew.definition(d) if d.name == "delegate" else d
                 for d in preview.tools]
        return dataclasses.replace(preview, tools=tools)

    def resolution_key(self) -> tuple[object, ...]:
        place = self._workspace
        agent = place.agent
        return ResolutionCache.key(place.catalog, agent.tools, agent.scene,
                                   self._crew.can_delegate, place.page_answers)

    def resolution(self) -> ToolResolution:
        """The agent's tools now, as :meth:`preview` resolves them (cached)."""
        key = self.resolution_key()
        cache = self._state.resolved
        resolution = cache.get(key)
        if resolution is None:
            place = self._workspace
            agent = place.agent
            resolution = resolve_tools(place.catalog, agent.tools,
                                       model_capabilities=place.provider.info.capabilities,
                                       scene=agent.scene,
                                       delegates=self._crew.can_delegate,
                                       notebook_page=place.page_answers)
            cache.put(key, resolution)
        return resolution

    def tool_context(self, call_id: str, on_progress: ProgressCallback,
                     response: tuple[str, tuple[ToolCallPart, ...], str] = ("", (), "")
                     ) -> ToolContext:
        """The context one call runs with; ``response``: the id and calls of the model
        response it belongs to, and the id of the message that began its turn."""
        place, crew = self._workspace, self._crew
        return ToolContext(session_id=self._state.id, tool_call_id=call_id,
                           working_dir=place.working_dir, namespace=place.namespace,
                           todo=self._state.todo, on_progress=on_progress,
                           threads=place.threads,
                           crew=crew if crew.can_delegate else None,
                           notebook=place.notebook, response_id=response[0],
                           response_calls=response[1], turn_id=response[2])
