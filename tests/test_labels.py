"""The one label table: both languages complete, placeholders that match, notices that
render from it, and the JS bundle reading the same file as Python."""

from __future__ import annotations

import copy
import json
import pickle
import re
import string
import zipfile
from pathlib import Path
from typing import Any

import pytest

from neta_nb import labels
from neta_nb.labels import LABELS, LANGS, NOTICE_CODES, Notice, t
from neta_nb.tools import AgentToolConfig, ToolCatalog, resolve_tools

ROOT = Path(__file__).resolve().parents[1]
TABLE = Path(labels.__file__).with_name("labels.json")


def _placeholders(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def test_every_key_exists_in_every_language_with_the_same_placeholders() -> None:
    keys = {lang: set(LABELS[lang]) for lang in LANGS}
    assert keys["en"] == keys["zh-CN"]
    for key, english in LABELS["en"].items():
        for lang in LANGS:
            assert LABELS[lang][key].strip(), (lang, key)
            assert _placeholders(LABELS[lang][key]) == _placeholders(english), (lang, key)


def test_placeholders_are_plain_names_js_can_fill() -> None:
    # js/src/i18n.ts fills `{name}` with a word-character pattern; anything fancier
    # (format specs, attribute access) would work in Python only.
    for lang in LANGS:
        for key, template in LABELS[lang].items():
            for _, field, spec, conversion in string.Formatter().parse(template):
                if field is not None:
                    assert re.fullmatch(r"\w+", field) and not spec and not conversion, key


def test_the_agent_level_wording_never_says_disable_in_chinese() -> None:
    # Seed 001 §7.4: "禁用" is not used for an agent-level action.
    assert not [key for key, text in LABELS["zh-CN"].items() if "禁用" in text]


def test_t_fills_placeholders_and_falls_back_to_english() -> None:
    assert t("panel_summary", "en", enabled=3, total=9, core=2) == (
        "3 of 9 tools enabled · 2 core")
    assert t("panel_summary", "zh-CN", enabled=3, total=9, core=2) == (
        "已启用 3/9 个工具 · 核心工具 2 个")
    assert t("plan", "fr") == "Plan"
    # Positional-only, so a template may use {key} itself.
    assert t("warning_unrecognised_key", "en", key="x") == (
        "Unrecognised key 'x' in the tool config was ignored.")
    with pytest.raises(KeyError):
        t("no_such_label")
    with pytest.raises(KeyError):
        t("panel_summary", "en", enabled=1)


NOTICES: list[tuple[Notice, str, str]] = [
    (Notice("globally_disabled"), "Disabled globally in tool management",
     "已在工具管理中全局停用"),
    (Notice("mcp_changed", server="docs"),
     "Suspended until the user reviews it: server 'docs' changed its description after it "
     "was granted", "已暂停，等待用户查看：服务器“docs”在授权后修改了此工具的描述"),
    (Notice("agent_disabled"), "Switched off for this agent", "已为当前 Agent 关闭"),
    (Notice("not_enabled"), "Not enabled for this agent", "当前 Agent 未启用"),
    (Notice("core_not_inherited"),
     "Not enabled for this agent (it is a core tool, and this agent does not inherit core "
     "tools)", "当前 Agent 未启用（核心工具，但当前 Agent 不继承核心工具）"),
    (Notice("needs_capability", capabilities=["vision"], model="x:y"),
     "Needs the 'vision' capability, which model x:y does not have",
     "需要 'vision' 能力，模型 x:y 不具备"),
    (Notice("needs_capability", capabilities=["audio", "vision"], model=None),
     "Needs the 'audio' and 'vision' capabilities, which the current model does not have",
     "需要 'audio'、'vision' 能力，当前模型不具备"),
    (Notice("scene", scene="crew"), "Not offered in scene 'crew'", "场景「crew」不提供此工具"),
    (Notice("no_subagents"),
     "Offered only to an agent with sub-agents (within the nesting limit)",
     "仅提供给带有子 Agent 的 Agent（且未超出嵌套层数上限）"),
    (Notice("unknown_tool", name="ghost", field="enabled"),
     "'ghost' is in enabled but no tool by that name exists; it is ignored.",
     "enabled 中的「ghost」不是已有的工具，已忽略。"),
    (Notice("enabled_but_globally_disabled", name="web"),
     "'web' is enabled for this agent but disabled globally in tool management; it stays off.",
     "「web」已对当前 Agent 启用，但已在工具管理中全局停用，仍不可用。"),
    (Notice("duplicate", name="a", field="disabled"),
     "'a' appears more than once in disabled; it counts once.",
     "「a」在 disabled 中出现了多次，只计一次。"),
    (Notice("enabled_and_disabled", name="a"),
     "'a' is both enabled and disabled for this agent; disabled wins.",
     "「a」对当前 Agent 同时启用和关闭，以关闭为准。"),
    (Notice("unrecognised_key", key="enabeld"),
     "Unrecognised key 'enabeld' in the tool config was ignored.",
     "工具配置中无法识别的键「enabeld」已忽略。"),
    (Notice("mcp_changed", server="t"),
     "Suspended until the user reviews it: server 't' changed its description after it "
     "was granted", "已暂停，等待用户查看：服务器“t”在授权后修改了此工具的描述"),
    (Notice("no_notebook_page"), "Needs a JupyterLab or Notebook 7 page",
     "需要 JupyterLab 或 Notebook 7 页面"),
    (Notice("legacy_toolset_unmatched", toolset="browser"),
     "Legacy toolset 'browser' matches no tool category; it was skipped during migration.",
     "旧配置中的工具集「browser」没有对应的工具分类，迁移时已跳过。"),
]


def test_every_notice_code_is_covered_here() -> None:
    assert {notice.code for notice, _, _ in NOTICES} == NOTICE_CODES


@pytest.mark.parametrize(("notice", "english", "chinese"), NOTICES,
                         ids=[f"{notice.code}-{n}" for n, (notice, _, _) in enumerate(NOTICES)])
def test_notices_render_in_both_languages(notice: Notice, english: str, chinese: str) -> None:
    assert notice == english and str(notice) == english and notice.text() == english
    assert notice.text("zh-CN") == chinese
    assert notice.text("fr") == english


def test_a_notice_is_data_and_stays_the_same() -> None:
    notice = Notice("needs_capability", capabilities=["audio", "vision"], model="m")
    assert notice.code == "needs_capability"
    assert dict(notice.params) == {"capabilities": ("audio", "vision"), "model": "m"}
    assert notice.to_json() == {"code": "needs_capability",
                                "params": {"capabilities": ["audio", "vision"], "model": "m"}}
    assert json.dumps([notice]) == json.dumps([str(notice)])
    for twin in (pickle.loads(pickle.dumps(notice)), copy.deepcopy(notice), copy.copy(notice)):
        assert (type(twin), twin, twin.code, twin.params) == (
            Notice, notice, notice.code, notice.params)
    with pytest.raises(AttributeError):
        notice.code = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        notice.anything = 1
    with pytest.raises(TypeError):
        notice.params["model"] = "x"  # type: ignore[index]
    with pytest.raises(KeyError, match="unknown notice code"):
        Notice("no_such_code")


def test_the_resolver_and_the_config_report_notices() -> None:
    catalog = ToolCatalog.demo()
    config = AgentToolConfig.load({"enabled": ["ghost", "web_search", "ask_user", "ask_user"],
                                   "disabled": ["ask_user"], "enabeld": []})
    result = resolve_tools(catalog, config, model_capabilities=set(), scene="chat",
                           model="m")
    codes = [(warning.code, dict(warning.params)) for warning in result.warnings]
    assert codes == [
        ("unrecognised_key", {"key": "enabeld"}),
        ("unknown_tool", {"name": "ghost", "field": "enabled"}),
        ("enabled_but_globally_disabled", {"name": "web_search"}),
        ("duplicate", {"name": "ask_user", "field": "enabled"}),
        ("enabled_and_disabled", {"name": "ask_user"}),
    ]
    reasons = {name: (reason.code, dict(reason.params))
               for name, reason in result.reasons.items()}
    assert reasons["web_search"] == ("globally_disabled", {})
    assert reasons["ask_user"] == ("agent_disabled", {})
    assert reasons["delegate"] == ("not_enabled", {})
    legacy = AgentToolConfig.load({"toolsets": ["gadgets"]}, catalog)
    assert [w.code for w in legacy.load_warnings] == ["legacy_toolset_unmatched"]
    # The model's refusal in another language comes from the same table.
    assert result.refusal("web_search", "zh-CN").startswith(
        "工具「web_search」对当前 Agent 不可用：已在工具管理中全局停用。可用工具：")


# --- the JS side reads the same file -------------------------------------------------------

def test_the_js_labels_import_this_table() -> None:
    source = (ROOT / "js" / "src" / "i18n.ts").read_text()
    imports = re.findall(r'^import\s+\w+\s+from\s+"([^"]+\.json)";', source, re.MULTILINE)
    assert len(imports) == 1
    assert (ROOT / "js" / "src" / imports[0]).resolve() == TABLE.resolve()
    # No other module keeps a table of its own (a language-keyed object literal).
    sources = [*(ROOT / "js" / "src").glob("*.ts"), *(ROOT / "neta_nb").rglob("*.py")]
    assert [path.name for path in sources if re.search(r'"zh-CN"\s*:\s*\{', path.read_text())
            and path.name not in ("i18n.ts", "labels.py")] == []


def test_the_built_bundle_carries_the_table() -> None:
    bundle = ROOT / "neta_nb" / "static" / "widgets.js"
    if not bundle.is_file():
        pytest.skip("the widget bundle is not built (cd js && npm run build)")
    text = bundle.read_text()
    # esbuild writes the JSON's strings as JS literals; plain ASCII ones appear verbatim.
    plain = {key: value for key, value in LABELS["en"].items()
             if value.isascii() and '"' not in value and "\\" not in value}
    missing = [key for key, value in plain.items() if value not in text]
    assert not missing


def test_the_wheel_carries_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hatchling: Any = pytest.importorskip("hatchling.builders.wheel")
    if (ROOT / "neta_nb" / "static" / "widgets.js").is_file():
        monkeypatch.setenv("NETA_NB_SKIP_JS", "1")  # the JS build is not what is tested here
    builder = hatchling.WheelBuilder(str(ROOT))
    wheel = next(iter(builder.build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as archive:
        assert json.loads(archive.read("neta_nb/labels.json")) == json.loads(TABLE.read_text())
