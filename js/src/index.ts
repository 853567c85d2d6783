/**
 * The bundle entry (neta_nb/static/widgets.js). Named exports are the plain components, for
 * any view that composes them (the chat view imports them from here); the default export is
 * the anywidget definition shared by every widget class, which picks its renderer by the
 * model's `_component` trait.
 */
import "./theme.css";
import type { RenderProps } from "@anywidget/types";
import { widgetRenderers } from "./widgets";
import { followLateLayout } from "./layout-after-render";

export { bindComponent, readTraits, request, writeBack } from "./anywidget-binding";
export type { Cleanup, RendererProps, WidgetRenderer } from "./anywidget-binding";
export { createChatView } from "./chat/chat-view";
export type { ChatItem, ChatOp, ChatView, ChatViewState } from "./chat/chat-view";
export { normalizeLang, t } from "./i18n";
export type { Lang } from "./i18n";
export { renderMarkdown, setMarkdown, stableBoundary } from "./markdown";
export { createSessionSidebar } from "./chat/session-sidebar";
export type { SessionSidebarState } from "./chat/session-sidebar";
export { createSkillCard } from "./cards/skill-card";
export type { SkillCardState } from "./cards/skill-card";
export { createThinkingBlock } from "./cards/thinking-block";
export type { ThinkingBlock, ThinkingBlockState } from "./cards/thinking-block";
export { createThinkingLevelSelector, levelLabel } from "./cards/thinking-level-selector";
export type { ThinkingLevelSelectorState, ThinkLevel } from "./cards/thinking-level-selector";
export { createTodoCard } from "./cards/todo-card";
export type { TodoCardState, TodoItem } from "./cards/todo-card";
export { contextLevel, createTokenStats, formatTokens } from "./cards/token-stats";
export type { TokenStatsState } from "./cards/token-stats";
export { createToolCard } from "./cards/tool-card";
export type { ToolCardState } from "./cards/tool-card";
export { categoryName, createToolConfigPanel } from "./tool_config/tool-config-panel";
export type { ToolConfigPanel, ToolConfigPanelState } from "./tool_config/tool-config-panel";
export type { Component, ComponentOptions } from "./types";
export { widgetRenderers };

function render({ model, el, kernel }: RenderProps & { kernel?: boolean }): () => void {
  const name = String(model.get("_component"));
  const renderer = widgetRenderers[name];
  if (!renderer) {
    // Shown where the user looks, not only in the console.
    const message = document.createElement("div");
    message.className = "neta-root neta-unknown-component";
    message.textContent = `neta_nb: no component named "${name}" in this bundle`;
    el.append(message);
    return () => message.remove();
  }
  const cleanup = renderer({ model, el, kernel: kernel !== false });
  const stopLayout = followLateLayout(model, el);
  return () => {
    stopLayout();
    cleanup();
  };
}

export default { render };
