"""preview_prompt: the exact system prompt and tool definitions a provider receives."""

from __future__ import annotations

import json

from neta_nb.tools import AgentToolConfig, PromptPreview, ToolCatalog, preview_prompt


def test_preview_matches_the_resolution(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["look", "search"], disabled=["read"])
    preview = preview_prompt(system_prompt="You are careful.\n", catalog=catalog,
                             config=config, model_capabilities={"tools"}, model="m1")
    assert isinstance(preview, PromptPreview)
    assert preview.system_prompt == "You are careful.\n"
    assert preview.tool_names == ["todo", "search"]
    assert preview.tools == [catalog["todo"].definition(), catalog["search"].definition()]
    assert preview.resolution.reasons["look"] == ("Needs the 'vision' capability, which "
                                                  "model m1 does not have")
    assert preview.resolution.reasons["read"] == "Switched off for this agent"


def test_preview_follows_config_changes(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    first = preview_prompt(system_prompt="p", catalog=catalog, config=config)
    config.set_tool("search", True, catalog)
    second = preview_prompt(system_prompt="p", catalog=catalog, config=config, scene="chat")
    assert first.tool_names == ["read", "todo"]
    assert second.tool_names == ["read", "todo", "search"]


def test_markdown_and_json_views(catalog: ToolCatalog) -> None:
    preview = preview_prompt(system_prompt="Be brief.", catalog=catalog,
                             config=AgentToolConfig(enabled=["ghost"]))
    markdown = preview._repr_markdown_()
    assert "```text\nBe brief.\n```" in markdown
    assert "**Tools (2)**" in markdown
    assert "- `read` — The read tool." in markdown
    assert "- `gone` — Disabled globally in tool management" in markdown
    assert "- 'ghost' is in enabled but no tool by that name exists; it is ignored." in markdown
    assert json.loads(preview.to_json()) == {
        "system_prompt": "Be brief.",
        "tools": [d.model_dump() for d in preview.tools],
    }
