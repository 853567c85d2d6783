/**
 * Labels of the chat view and the session list, in English and Chinese (zh-CN, the product
 * specs' wording). Kept beside the chat modules; the cards' labels live in i18n.ts.
 */
import type { Lang } from "./i18n";

const CHAT_STRINGS = {
  en: {
    send: "Send",
    stop: "Stop",
    placeholder: "Message {agent}…  (Enter to send, Shift+Enter for a new line)",
    you: "You",
    working: "Working…",
    stopped: "Stopped",
    killed: "Interrupted: the kernel stopped",
    error: "Error",
    approval_title: "Allow {name} to run?",
    approval_hint: "This tool needs your approval before it runs.",
    allow_once: "Allow once",
    allow_always: "Allow always",
    reject: "Reject",
    compacted: "Context compacted · {n} messages folded · {before} → {after} tokens",
    empty_title: "Start a conversation",
    empty_hint: "Ask {agent} anything. Its plan, tools and thinking show up here as it works.",
    loading_older: "Loading earlier messages…",
    agent: "Agent",
    new_chat: "New chat",
    chats: "Chats",
    running: "Running…",
    no_sessions: "No chats yet",
    messages: "{n} messages",
  },
  "zh-CN": {
    send: "发送",
    stop: "停止",
    placeholder: "给 {agent} 发消息…（Enter 发送，Shift+Enter 换行）",
    you: "你",
    working: "执行中...",
    stopped: "已停止",
    killed: "已中断：内核已停止",
    error: "错误",
    approval_title: "允许运行 {name}？",
    approval_hint: "该工具需要你的授权才能运行。",
    allow_once: "允许一次",
    allow_always: "始终允许",
    reject: "拒绝",
    compacted: "上下文已压缩 · 折叠 {n} 条消息 · {before} → {after} tokens",
    empty_title: "开始新的对话",
    empty_hint: "向 {agent} 提问。它的任务规划、工具调用和思考过程会在这里实时显示。",
    loading_older: "正在加载更早的消息…",
    agent: "Agent",
    new_chat: "新建对话",
    chats: "对话",
    running: "执行中...",
    no_sessions: "暂无对话",
    messages: "{n} 条消息",
  },
} as const;

export type ChatLabelKey = keyof (typeof CHAT_STRINGS)["en"];

export function chatLabel(lang: Lang, key: ChatLabelKey, params: Record<string, string | number> = {}): string {
  const template: string = CHAT_STRINGS[lang][key] ?? CHAT_STRINGS.en[key];
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ""));
}
