/** Labels in English and Chinese (zh-CN, the product specs' wording). */

export type Lang = "en" | "zh-CN";

const STRINGS = {
  en: {
    plan: "Plan",
    done_count: "{k}/{n} done",
    in_progress: "In progress",
    collapse: "Collapse",
    expand: "Expand",
    status_pending: "Pending",
    status_completed: "Completed",
    status_cancelled: "Cancelled",
    tool_running: "Running",
    tool_done: "Done",
    tool_error: "Failed",
    arguments: "Arguments",
    result: "Result",
    no_arguments: "No arguments",
    skill_done: "Done",
    skill_error: "Failed",
    view_result: "View result",
    hide_result: "Hide",
    starting: "Starting…",
    thinking: "Thinking",
    thinking_streaming: "Thinking…",
    calls: "{n} calls",
    calls_one: "{n} call",
    context: "Context",
    input_tokens: "Input",
    output_tokens: "Output",
    total_tokens: "Total",
    api_calls: "API calls",
    context_used: "Context used",
    thinking_level: "Thinking level",
    level_off: "Off",
    level_minimal: "Minimal",
    level_low: "Low",
    level_medium: "Medium",
    level_high: "High",
    level_adaptive: "Adaptive",
    no_thinking: "No thinking",
    request_timeout: "No reply from the kernel within {seconds} s. Is it busy or stopped? Try again.",
    kernel_disconnected: "The kernel restarted or stopped; run the cell again to use this widget.",
  },
  "zh-CN": {
    plan: "任务规划",
    done_count: "{k}/{n} 完成",
    in_progress: "进行中",
    collapse: "收起",
    expand: "展开",
    status_pending: "待处理",
    status_completed: "已完成",
    status_cancelled: "已取消",
    tool_running: "执行中",
    tool_done: "完成",
    tool_error: "失败",
    arguments: "参数",
    result: "结果",
    no_arguments: "无参数",
    skill_done: "完成",
    skill_error: "失败",
    view_result: "查看结果",
    hide_result: "收起",
    starting: "准备中…",
    thinking: "思考过程",
    thinking_streaming: "思考中…",
    calls: "{n}次",
    calls_one: "{n}次",
    context: "上下文",
    input_tokens: "输入",
    output_tokens: "输出",
    total_tokens: "合计",
    api_calls: "调用次数",
    context_used: "上下文已用",
    thinking_level: "思考级别",
    level_off: "关闭",
    level_minimal: "极简",
    level_low: "低",
    level_medium: "中等",
    level_high: "高",
    level_adaptive: "自适应",
    no_thinking: "不支持思考",
    request_timeout: "内核 {seconds} 秒内没有响应，可能正忙或已停止，请重试。",
    kernel_disconnected: "内核已重启或停止，请重新运行该单元格以继续使用此组件。",
  },
} as const;

export type MessageKey = keyof (typeof STRINGS)["en"];

export function normalizeLang(value: unknown): Lang {
  return typeof value === "string" && value.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

/** The label for `key` in `lang`, with `{name}` placeholders filled from `params`. */
export function t(lang: Lang, key: MessageKey, params: Record<string, string | number> = {}): string {
  const template: string = STRINGS[lang][key] ?? STRINGS.en[key];
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ""));
}
