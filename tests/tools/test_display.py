"""Rich displays of resolutions, configs, catalogs, steps, diffs and migrations: every tool
with its state and reason, and nothing a tool provides ever renders as markup."""

from __future__ import annotations

import re

from neta_nb.labels import t
from neta_nb.tools import AgentToolConfig, Tool, ToolCatalog, resolve_tools

HOSTILE = "<script>alert(1)</script>"


def _hostile_catalog() -> ToolCatalog:
    catalog = ToolCatalog.demo()
    catalog.register(Tool(name="evil_tool", description=f"{HOSTILE} `tick` **bold**",
                          handler=lambda: "", category=f"cat{HOSTILE}",
                          label=f"Label {HOSTILE}"))
    return catalog


def _without_code_spans(markdown: str) -> str:
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", markdown)


def _displays() -> list[object]:
    catalog = _hostile_catalog()
    config = AgentToolConfig(enabled=["evil_tool", "python", f"ghost`{HOSTILE}"],
                             disabled=["read_file"])
    resolution = resolve_tools(catalog, config, model_capabilities=set(), model=HOSTILE)
    other = resolve_tools(catalog, AgentToolConfig(), model_capabilities={"vision"})
    legacy = AgentToolConfig.load_report(
        {"toolsets": ["base", f"x{HOSTILE}"], "tools": {"disabled": []}}, catalog)
    return [resolution, resolution.steps, resolution.diff(other), other.diff(resolution),
            config, catalog, legacy]


def test_no_tool_provided_text_renders_as_markup() -> None:
    for shown in _displays():
        html_text = shown._repr_html_()  # type: ignore[attr-defined]
        markdown = shown._repr_markdown_()  # type: ignore[attr-defined]
        assert "<script" not in html_text.lower(), type(shown)
        assert "<script" not in _without_code_spans(markdown).lower(), type(shown)
        assert "\n" not in repr(shown)


def test_resolution_display_has_every_tool_with_state_and_reason() -> None:
    catalog = ToolCatalog.demo()
    config = AgentToolConfig(enabled=["python", "describe_image"], disabled=["read_file"])
    resolution = resolve_tools(catalog, config, model_capabilities={"tools"}, model="m1")
    for lang in ("en", "zh-CN"):
        shown = resolution.display(lang)
        for item in catalog:
            state = t(f"state_{resolution.states[item.name].value}", lang)
            reason = resolution.reasons.get(item.name)
            row = next(line for line in shown.markdown.splitlines()
                       if f"`{item.name}`" in line)
            assert state in row.replace("\\", "")
            if reason is not None:
                assert reason.text(lang) in row.replace("\\", "")
            assert f"<code>{item.name}</code>" in shown.html
            assert state in shown.html
    # Grouped by category, in the panel's order.
    rows = [line for line in resolution._repr_markdown_().splitlines() if "| `" in line]
    assert [re.search(r"`([^`]+)`", row).group(1) for row in rows] == [  # type: ignore[union-attr]
        item.name for item in catalog.ordered()]
    assert resolution._repr_html_() == resolution.display("en").html
    assert repr(resolution).startswith("ToolResolution(")


def test_html_has_no_fixed_light_background() -> None:
    for shown in _displays():
        html_text = shown._repr_html_()  # type: ignore[attr-defined]
        assert not re.search(r"background(-color)?:\s*#(fff|f[0-9a-f]{5})", html_text, re.I)
        assert "background:transparent" in html_text


def test_displays_are_deterministic() -> None:
    first = [(s._repr_html_(), s._repr_markdown_()) for s in _displays()]  # type: ignore[attr-defined]
    second = [(s._repr_html_(), s._repr_markdown_()) for s in _displays()]  # type: ignore[attr-defined]
    assert first == second
    assert not any(re.search(r"0x[0-9a-f]{6,}", h + m) for h, m in first)


def test_load_report_keeps_load_and_reports_the_migration() -> None:
    catalog = ToolCatalog.demo()
    legacy = {"toolsets": ["base", "memory", "nope"], "tools": {"disabled": ["read_file"]}}
    report = AgentToolConfig.load_report(legacy, catalog)
    assert report.config == AgentToolConfig.load(legacy, catalog)
    assert report.legacy and report.before == legacy
    assert report.after == AgentToolConfig.load(legacy, catalog).dump()
    assert report.brought_in == {"base": ["list_variables", "python", "web_search"],
                                 "memory": ["recall", "remember"]}
    assert [note.code for note in report.notes] == ["legacy_toolset_unmatched"]
    assert "nope" in report._repr_markdown_()
    assert not AgentToolConfig.load_report({"enabled": ["python"]}, catalog).legacy
