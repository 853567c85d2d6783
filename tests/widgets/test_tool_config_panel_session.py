"""ToolConfigPanel.for_session: the panel shows what the session's next model call sends
(model capabilities, scene), and follows the session's config, model and scene."""

from __future__ import annotations

from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ToolCatalog
from neta_nb.events import DoneEvent, SubagentEvent, TokenEvent
from neta_nb.providers import create_provider
from neta_nb.widgets import ToolConfigPanel

from .conftest import SentMessages


@pytest.fixture
def session() -> AgentSession:
    agent = Agent("analyst", model="scripted", system_prompt="Be exact.",
                  tools=AgentToolConfig(enabled=["describe_image", "word_count"]))
    # o3-mini: tools and thinking, no vision (the model table's entry).
    provider = create_provider("openai:o3-mini", api_key="sk-test-never-used")
    return AgentSession(agent, ToolCatalog.demo(), provider=provider)


def _enabled(panel: ToolConfigPanel) -> list[str]:
    return [name for name, verdict in panel.states.items() if verdict["available"]]


def test_the_panel_shows_the_tools_the_session_sends(session: AgentSession) -> None:
    panel = ToolConfigPanel.for_session(session)
    sent_names = session.preview().tool_names
    assert "describe_image" not in sent_names  # the runtime drops it: no vision
    assert panel.enabled_tools == sent_names
    assert sorted(_enabled(panel)) == sorted(sent_names)
    verdict = panel.states["describe_image"]
    assert verdict["on"] is True and verdict["available"] is False
    assert verdict["reason_code"] == "needs_capability"
    assert "openai:o3-mini" in verdict["reason"]
    assert panel.session is session and panel.system_prompt == "Be exact."
    # Built from the catalog and config alone, the panel filters nothing by model.
    plain = ToolConfigPanel(session.catalog, session.agent.tools)
    assert "describe_image" in plain.enabled_tools


def test_config_edits_show_at_once(session: AgentSession) -> None:
    panel = ToolConfigPanel.for_session(session)
    session.agent.tools.set_tool("word_count", False, session.catalog)
    assert "word_count" not in panel.enabled_tools
    assert panel.enabled_tools == session.preview().tool_names


def test_a_new_model_or_scene_shows_at_the_next_event(session: AgentSession) -> None:
    panel = ToolConfigPanel.for_session(session)
    session.provider = create_provider("openai:gpt-4o", api_key="sk-test-never-used")
    # Attributes have no change notification: the session's next event brings it in.
    session.state.emit(DoneEvent(stop_reason="end_turn"))
    assert "describe_image" in panel.enabled_tools
    assert panel.enabled_tools == session.preview().tool_names
    session.agent.scene = "chat"
    panel.refresh()
    assert panel.enabled_tools == session.preview().tool_names
    assert panel.scene == "chat"


def test_a_replaced_config_is_followed(session: AgentSession) -> None:
    panel = ToolConfigPanel.for_session(session)
    old = session.agent.tools
    session.agent.tools = AgentToolConfig(inherit_core_tools=False, enabled=["todo"])
    panel.refresh()
    assert panel.config is session.agent.tools
    assert panel.enabled_tools == ["todo"] == session.preview().tool_names
    old.set_tool("word_count", False, session.catalog)  # no longer followed
    assert panel.enabled_tools == ["todo"]
    session.agent.tools.set_tool("word_count", True, session.catalog)
    assert panel.enabled_tools == session.preview().tool_names


def test_the_prompt_preview_request_is_the_sessions(session: AgentSession,
                                                    sent: SentMessages) -> None:
    panel = ToolConfigPanel.for_session(session)
    panel._on_custom_message(panel, {"kind": "preview", "id": "p1"}, [])
    reply: dict[str, Any] = next(m for m in sent.of_kind("reply") if m["id"] == "p1")
    preview = session.preview()
    assert reply["ok"] is True
    assert reply["result"]["system_prompt"] == preview.system_prompt == "Be exact."
    assert [t["name"] for t in reply["result"]["tools"]] == preview.tool_names


def test_closing_stops_following(session: AgentSession) -> None:
    panel = ToolConfigPanel.for_session(session)
    shown = list(panel.enabled_tools)
    panel.close()
    session.agent.tools.set_tool("word_count", False, session.catalog)
    session.state.emit(DoneEvent(stop_reason="end_turn"))
    assert panel.enabled_tools == shown


def test_a_sub_agents_events_do_not_refresh_the_panel(session: AgentSession) -> None:
    """A child's events reach the parent wrapped, one per delta of its own: a refresh per
    event would resolve and render every tool again for each of them."""
    panel = ToolConfigPanel.for_session(session)
    session.provider = create_provider("openai:gpt-4o", api_key="sk-test-never-used")
    for inner in (TokenEvent(text="x"), DoneEvent(stop_reason="end_turn")):
        session.state.emit(SubagentEvent(id="d1", event=inner))
    assert "describe_image" not in panel.enabled_tools  # not refreshed
    session.state.emit(DoneEvent(stop_reason="end_turn"))  # the session's own event
    assert "describe_image" in panel.enabled_tools
