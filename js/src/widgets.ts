/**
 * The anywidget renderers, one per Python widget class, selected by the model's
 * `_component` trait. Each binds a plain component to the model's traits.
 */
import type { AnyModel } from "@anywidget/types";
import { bindComponent, request, type WidgetRenderer } from "./anywidget-binding";
import { renderChatView, renderSessionSidebar } from "./chat-view-binding";
import { createSkillCard, type SkillCardState } from "./skill-card";
import { createThinkingBlock, type ThinkingBlock, type ThinkingBlockState } from "./thinking-block";
import { createThinkingLevelSelector, type ThinkingLevelSelectorState } from "./thinking-level-selector";
import { createTodoCard, type TodoCardState } from "./todo-card";
import { createTokenStats, type TokenStatsState } from "./token-stats";
import { createToolCard, type ToolCardState } from "./tool-card";
import { createToolConfigPanel, type ToolConfigPanel, type ToolConfigPanelState } from "./tool-config-panel";

type Model = AnyModel<Record<string, unknown>>;

interface AppendMessage {
  kind: "append";
  seq: number;
  text: string;
}

interface StreamSnapshot {
  text: string;
  seq: number;
}

/**
 * Streamed thinking arrives as numbered `append` batches (at most one per frame interval)
 * while the `text` trait is synced only when the stream ends. A view that joins mid-stream,
 * or that sees a gap in the numbering, asks the kernel for a snapshot and goes on from it.
 */
function bindThinkingStream(block: ThinkingBlock, model: Model): () => void {
  let seq: number | null = null;
  let resyncing = false;
  let disposed = false;

  const resync = () => {
    if (resyncing || disposed) return;
    resyncing = true;
    seq = null;
    request<StreamSnapshot>(model, "snapshot")
      .then((snapshot) => {
        if (disposed) return;
        seq = snapshot.seq;
        block.update({ text: snapshot.text });
      })
      .catch(() => undefined)
      .finally(() => {
        resyncing = false;
      });
  };

  const onMessage = (message: unknown) => {
    const append = message as AppendMessage;
    if (!append || append.kind !== "append") return;
    if (seq === null) {
      // Batches before the snapshot's reply are in the snapshot; the kernel sends in order.
      if (!resyncing) resync();
      return;
    }
    if (append.seq <= seq) return;
    if (append.seq !== seq + 1) {
      resync();
      return;
    }
    seq = append.seq;
    block.append(append.text);
  };
  model.on("msg:custom", onMessage);
  // A stream that is over needs no snapshot: its text trait is complete.
  if (model.get("streaming")) resync();
  else seq = Number(model.get("_seq") ?? 0);
  const onStreaming = () => {
    if (model.get("streaming")) {
      seq = Number(model.get("_seq") ?? 0);
    }
  };
  model.on("change:streaming", onStreaming);
  return () => {
    disposed = true;
    model.off("msg:custom", onMessage);
    model.off("change:streaming", onStreaming);
  };
}

export const widgetRenderers: Record<string, WidgetRenderer> = {
  "tool-config-panel": (props) =>
    bindComponent<ToolConfigPanelState, ToolConfigPanel>(
      props,
      createToolConfigPanel,
      ["tools", "states", "enabled_tools", "categories", "summary", "unknown", "warnings", "search", "state_filter", "core_only", "collapsed", "lang"],
      (panel, model) => {
        panel.setRequester((kind, payload) => request(model, kind, payload));
        return () => undefined;
      },
    ),
  "chat-view": renderChatView,
  "session-sidebar": renderSessionSidebar,
  "todo-card": (props) => bindComponent<TodoCardState, ReturnType<typeof createTodoCard>>(props, createTodoCard, ["todos", "collapsed", "lang"]),
  "tool-card": (props) =>
    bindComponent<ToolCardState, ReturnType<typeof createToolCard>>(props, createToolCard, [
      "name",
      "label",
      "status",
      "args",
      "result",
      "expanded",
      "lang",
    ]),
  "skill-card": (props) =>
    bindComponent<SkillCardState, ReturnType<typeof createSkillCard>>(props, createSkillCard, [
      "name",
      "label",
      "status",
      "percent",
      "step",
      "detail",
      "result",
      "expanded",
      "lang",
    ]),
  "thinking-block": (props) =>
    bindComponent<ThinkingBlockState, ThinkingBlock>(
      props,
      createThinkingBlock,
      ["text", "streaming", "collapsed", "lang"],
      bindThinkingStream,
    ),
  "token-stats": (props) =>
    bindComponent<TokenStatsState, ReturnType<typeof createTokenStats>>(props, createTokenStats, [
      "current",
      "context",
      "running",
      "lang",
    ]),
  "thinking-level-selector": (props) =>
    bindComponent<ThinkingLevelSelectorState, ReturnType<typeof createThinkingLevelSelector>>(
      props,
      createThinkingLevelSelector,
      ["levels", "level", "disabled", "lang"],
    ),
};
