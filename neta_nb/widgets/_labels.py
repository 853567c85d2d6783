"""The labels the static fallbacks use, in English and Chinese (the same wording as the JS
components' ``js/src/i18n.ts``)."""

from __future__ import annotations

from typing import Final

__all__ = ["LABELS", "label"]

LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "plan": "Plan",
        "done_count": "{k}/{n} done",
        "in_progress": "In progress",
        "cancelled": "Cancelled",
        "tool_running": "Running",
        "tool_done": "Done",
        "tool_error": "Failed",
        "arguments": "Arguments",
        "result": "Result",
        "skill_done": "Done",
        "skill_error": "Failed",
        "thinking": "Thinking",
        "thinking_streaming": "Thinking…",
        "calls": "{n} calls",
        "calls_one": "{n} call",
        "context": "Context",
        "thinking_level": "Thinking level",
        "level_off": "Off",
        "level_minimal": "Minimal",
        "level_low": "Low",
        "level_medium": "Medium",
        "level_high": "High",
        "level_adaptive": "Adaptive",
    },
    "zh-CN": {
        "plan": "任务规划",
        "done_count": "{k}/{n} 完成",
        "in_progress": "进行中",
        "cancelled": "已取消",
        "tool_running": "执行中",
        "tool_done": "完成",
        "tool_error": "失败",
        "arguments": "参数",
        "result": "结果",
        "skill_done": "完成",
        "skill_error": "失败",
        "thinking": "思考过程",
        "thinking_streaming": "思考中…",
        "calls": "{n}次",
        "calls_one": "{n}次",
        "context": "上下文",
        "thinking_level": "思考级别",
        "level_off": "关闭",
        "level_minimal": "极简",
        "level_low": "低",
        "level_medium": "中等",
        "level_high": "高",
        "level_adaptive": "自适应",
    },
}


def label(lang: str, key: str, **params: object) -> str:
    table = LABELS.get(lang, LABELS["en"])
    return table.get(key, LABELS["en"][key]).format(**params)
