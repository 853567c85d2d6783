/**
 * The anywidget renderers, one per Python widget class, selected by the model's
 * `_component` trait. Each binds a plain component to the model's traits.
 */
import type { AnyModel } from "@anywidget/types";
import { bindComponent, fetchWholeText, readTraits, requestShowingErrors, writeBack, type Cleanup, type RendererProps, type WidgetRenderer } from "./anywidget-binding";
import { type BatchGrid, type BatchGridState, createBatchGrid, type OpenRowReply, type OpenRowRequest } from "./batch/batch-grid";
import { applyNestedOps, type Nesting } from "./chat/chat-transcript";
import type { ChatOp, SubagentPart } from "./chat/chat-view-traits";
import { normalizeLang, type Lang } from "./i18n";
import { renderChatView, renderSessionSidebar } from "./chat/chat-view-binding";
import { answerMentionRequests } from "./chat/mention-source";
import { followNumberedBatches } from "./numbered-batches";
import { createSkillCard, type SkillCardState } from "./cards/skill-card";
import { createSubagentCard, type SubagentCardState } from "./cards/subagent-card";
import { createThinkingBlock, type ThinkingBlock, type ThinkingBlockState } from "./cards/thinking-block";
import { createThinkingLevelSelector, type ThinkingLevelSelectorState } from "./cards/thinking-level-selector";
import { createTodoCard, type TodoCardState } from "./cards/todo-card";
import { createTokenStats, type TokenStatsState } from "./cards/token-stats";
import { createToolCard, type ToolCardState } from "./cards/tool-card";
import { createToolConfigPanel, type ToolConfigPanel, type ToolConfigPanelState } from "./tool_config/tool-config-panel";

type Model = AnyModel<Record<string, unknown>>;

/** `full_text` of a standalone tool or skill card (Python twin: `CardFullTextRequest` in
 * neta_nb/widgets/cards/tool_card.py). */
interface CardFullTextRequest {
  field: string;
}

/** Python twin: `AppendMessage` in neta_nb/widgets/cards/thinking_block.py. */
interface AppendMessage {
  kind: "append";
  seq: number;
  text: string;
}

/** Python twin: `StreamSnapshot` in neta_nb/widgets/cards/thinking_block.py. */
interface StreamSnapshot {
  text: string;
  seq: number;
}

/**
 * Streamed thinking arrives as numbered `append` batches (at most one per frame interval)
 * while the `text` trait is synced only when the stream ends. A view that joins mid-stream,
 * or that sees a gap in the numbering, asks the kernel for a snapshot and goes on from it.
 */
function bindThinkingStream(block: ThinkingBlock, model: Model, kernel: boolean): () => void {
  const stream = followNumberedBatches<AppendMessage, StreamSnapshot>(model, {
    kind: "append",
    snapshot: "snapshot",
    applyBatch: (append) => block.append(append.text),
    applySnapshot: (snapshot) => block.update({ text: snapshot.text }),
  });
  // A stream that is over needs no snapshot: its text trait is complete. Without a kernel
  // the saved text is all there is.
  if (model.get("streaming") && kernel) stream.resync();
  else stream.continueFrom(Number(model.get("_seq") ?? 0));
  const onStreaming = () => {
    if (model.get("streaming")) stream.continueFrom(Number(model.get("_seq") ?? 0));
  };
  model.on("change:streaming", onStreaming);
  return () => {
    stream.dispose();
    model.off("change:streaming", onStreaming);
  };
}

/** Python twin: `SubagentSnapshot` in neta_nb/widgets/cards/subagent_card.py. */
interface SubagentSnapshot {
  seq: number;
  part: SubagentPart;
}

interface SubagentBatch {
  kind: "batch";
  seq: number;
  ops: ChatOp[];
}

/**
 * `SubagentCard` on its own: the same card the chat view nests, its transcript streamed as
 * numbered batches of the chat's ops (each with the run's `path`), whole in the `part`
 * trait once the run is over. Without a kernel: what was saved, with no Stop.
 */
function renderSubagentCard({ model: anyModel, el, kernel = true }: RendererProps): Cleanup {
  const model = anyModel as Model;
  const runId = String(model.get("run_id") ?? "run");
  const nesting: Nesting = {
    cards: new Map(),
    createCard: createSubagentCard,
    stop: kernel && model.get("can_stop") ? () => requestShowingErrors(model, "stop") : undefined,
    fetchWhole: (request) => fetchWholeText(model, el, { ...request }),
  };
  const card = createSubagentCard(el, {
    lang: normalizeLang(model.get("lang")),
    path: [runId],
    nesting,
    onUserChange: writeBack<SubagentCardState>(model),
  });
  const traits = readTraits<{ part: SubagentPart; expanded: boolean | null; lang: Lang }>(model, ["part", "expanded", "lang"]);
  card.update({ part: traits.part ?? null, expanded: traits.expanded ?? null, lang: traits.lang });
  const stream = followNumberedBatches<SubagentBatch, SubagentSnapshot>(model, {
    kind: "batch",
    snapshot: "sync",
    applyBatch: (batch) => {
      if (!applyNestedOps(nesting, batch.ops)) stream.resync();
    },
    applySnapshot: (snapshot) => card.update({ part: snapshot.part }),
  });
  const onPart = () => card.update({ part: model.get("part") as SubagentPart });
  const onExpanded = () => card.update({ expanded: model.get("expanded") as boolean | null });
  const onLang = () => card.update({ lang: normalizeLang(model.get("lang")) });
  const onSeq = () => {
    if ((model.get("part") as SubagentPart | undefined)?.status !== "running") stream.continueFrom(Number(model.get("_seq") ?? 0));
  };
  model.on("change:part", onPart);
  model.on("change:expanded", onExpanded);
  model.on("change:lang", onLang);
  model.on("change:_seq", onSeq);
  if ((traits.part as SubagentPart | undefined)?.status === "running" && kernel) stream.resync();
  else stream.continueFrom(Number(model.get("_seq") ?? 0));
  return () => {
    stream.dispose();
    model.off("change:part", onPart);
    model.off("change:expanded", onExpanded);
    model.off("change:lang", onLang);
    model.off("change:_seq", onSeq);
    card.destroy();
  };
}

/** The chat view, whose input asks the kernel about `@` mentions (./chat/mention-source.ts). */
function renderChatViewWithMentions(props: RendererProps): Cleanup {
  const stopAnswering = props.kernel === false ? () => undefined : answerMentionRequests(props.model as Model, props.el);
  const cleanup = renderChatView(props);
  return () => {
    cleanup();
    stopAnswering();
  };
}

export const widgetRenderers: Record<string, WidgetRenderer> = {
  "batch-grid": (props) =>
    bindComponent<BatchGridState, BatchGrid>(
      props,
      (el, options) =>
        createBatchGrid(el, {
          ...options,
          // Saved widget state without a kernel: the tiles still say what they are.
          openRow:
            props.kernel === false
              ? undefined
              : (idx) => requestShowingErrors<OpenRowReply>(props.model as Model, "open_row", { idx } satisfies OpenRowRequest),
        }),
      ["run_id", "total", "states", "counts", "failures", "finished", "selected", "lang"],
    ),
  "subagent-card": renderSubagentCard,
  "tool-config-panel": (props) =>
    bindComponent<ToolConfigPanelState, ToolConfigPanel>(
      props,
      createToolConfigPanel,
      ["tools", "states", "enabled_tools", "categories", "summary", "unknown", "warnings", "search", "state_filter", "core_only", "collapsed", "preview_options", "previewing_as", "mcp_servers", "lang"],
      (panel, model) => {
        // The panel shows `error.message` in its error line: timeouts and a lost kernel
        // arrive already worded in the model's language.
        panel.setRequester((kind, payload) => requestShowingErrors(model, kind, payload));
        return () => undefined;
      },
    ),
  "chat-view": renderChatViewWithMentions,
  "session-sidebar": renderSessionSidebar,
  "todo-card": (props) => bindComponent<TodoCardState, ReturnType<typeof createTodoCard>>(props, createTodoCard, ["todos", "collapsed", "paused", "lang"]),
  "tool-card": (props) =>
    bindComponent<ToolCardState, ReturnType<typeof createToolCard>>(
      props,
      (el, options) =>
        createToolCard(el, {
          ...options,
          fetchWhole: (field) => fetchWholeText(props.model as Model, el, { field } satisfies CardFullTextRequest),
        }),
      ["name", "label", "status", "args", "args_chars", "result", "result_chars", "outputs", "expanded", "lang"],
    ),
  "skill-card": (props) =>
    bindComponent<SkillCardState, ReturnType<typeof createSkillCard>>(
      props,
      (el, options) =>
        createSkillCard(el, {
          ...options,
          fetchWhole: () => fetchWholeText(props.model as Model, el, { field: "result" } satisfies CardFullTextRequest),
        }),
      ["name", "label", "status", "percent", "step", "detail", "result", "result_chars", "expanded", "lang"],
    ),
  "thinking-block": (props) =>
    bindComponent<ThinkingBlockState, ThinkingBlock>(
      props,
      createThinkingBlock,
      ["text", "streaming", "collapsed", "lang"],
      (block, model) => bindThinkingStream(block, model, props.kernel !== false),
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
