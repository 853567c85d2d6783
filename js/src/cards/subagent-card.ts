/**
 * A sub-agent's run (issue 15), in its parent's message where the `delegate` call is: the
 * child's name and task, a live status line (the tool or skill it runs now, its plan k/N,
 * its tokens) with its own Stop, and — expanded — the child's whole transcript, drawn by
 * the same `Transcript` and message views as the chat itself (thinking, tool and skill
 * cards, the streaming answer; a grandchild's card nests the same way).
 *
 * One DOM node from start to end: the card is built once for its call and updated in
 * place. Open while the child works, so its answer is seen streaming; folded once it is
 * over, unless the user opened or closed it themselves.
 *
 * The transcript arrives two ways: whole in a `SubagentPart` (a snapshot, the saved state)
 * or, while the child runs, as the chat's ops carrying this card's `path` — routed here
 * through `nesting.cards` (see chat-transcript.ts) and applied with `applyOps`.
 */
import "./subagent-card.css";
import { pathKey, Transcript, type Nesting } from "../chat/chat-transcript";
import type { ChatOp, SubagentPart, SubagentStatus } from "../chat/chat-view-traits";
import { createCollapsible, element } from "../dom";
import { normalizeLang, t, type Lang, type MessageKey } from "../i18n";
import { createInlineError } from "../inline-error";
import { normalizeRunStatus, type RunStatus } from "../status-icon";
import { createCardFrame } from "./card-frame";
import { formatTokens } from "./token-stats";
import type { Component } from "../types";
import { createTraceLine, type TraceIds } from "./trace-line";

export interface SubagentCardState {
  /** The `delegate` call's own status (the parent's tool card status). */
  status: RunStatus;
  part: SubagentPart | null;
  /** Where the `delegate` call is in the user's traces, when traced (trace-line.ts). */
  trace: TraceIds | null;
  /** null: the default (open while running); a boolean once the user chose. */
  expanded: boolean | null;
  lang: Lang;
}

export interface SubagentCardOptions {
  lang?: Lang;
  /** The run ids from the top down to this card's run (its `delegate` call id last). */
  path: readonly string[];
  nesting: Nesting;
  /** The user opened or closed the card. */
  onUserChange?: (patch: Partial<SubagentCardState>) => void;
}

export interface SubagentCard extends Component<SubagentCardState> {
  readonly root: HTMLDivElement;
  /** The part as drawn now, with the transcript as it stands (for the saved state). */
  part(): SubagentPart | null;
  /** Apply streamed ops of this card's transcript. */
  applyOps(ops: readonly ChatOp[]): void;
}

const SUBAGENT_STATUSES: readonly SubagentStatus[] = ["running", "done", "error", "cancelled", "interrupted"];

const STATUS_LABEL: Record<SubagentStatus, MessageKey> = {
  running: "subagent_running",
  done: "subagent_done",
  error: "subagent_error",
  cancelled: "subagent_cancelled",
  interrupted: "subagent_interrupted",
};

const STATUS_ICON: Record<SubagentStatus, RunStatus> = {
  running: "running",
  done: "done",
  error: "error",
  cancelled: "cancelled",
  interrupted: "cancelled",
};

function normalizeStatus(value: unknown): SubagentStatus {
  return SUBAGENT_STATUSES.includes(value as SubagentStatus) ? (value as SubagentStatus) : "running";
}

export function createSubagentCard(el: HTMLElement, options: SubagentCardOptions): SubagentCard {
  const state: SubagentCardState = {
    status: "running",
    part: null,
    trace: null,
    expanded: null,
    lang: normalizeLang(options.lang),
  };
  const path = [...options.path];
  const runId = path[path.length - 1] ?? "";
  const lang = () => state.lang;

  const task = element("span", "neta-subagent-task");
  const frame = createCardFrame({
    kind: "subagent",
    statuses: SUBAGENT_STATUSES,
    title: ["span", "neta-subagent-agent"],
    extras: [task],
    onToggle: () => {
      state.expanded = !expanded();
      render();
      options.onUserChange?.({ expanded: state.expanded });
    },
    ruled: true,
  });
  const { root, header, title: agent } = frame;
  root.dataset.run = runId;

  const line = element("div", "neta-subagent-line");
  const statusTag = element("span", "neta-tag neta-subagent-status");
  const activity = element("span", "neta-subagent-activity");
  const plan = element("span", "neta-subagent-plan");
  const tokens = element("span", "neta-subagent-tokens");
  const stop = element("button", "neta-chat-button neta-chat-button-danger neta-subagent-stop");
  stop.type = "button";
  line.append(statusTag, activity, plan, tokens, stop);
  const stopError = createInlineError(lang, "neta-subagent-stop-error");

  const older = element("div", "neta-subagent-older");
  const list = element("div", "neta-chat-list neta-subagent-list");
  const liveHost = element("div", "neta-chat-live neta-subagent-live");
  const empty = element("div", "neta-subagent-empty");
  const traceLine = createTraceLine();
  const body = createCollapsible("neta-subagent-body", older, list, liveHost, empty, traceLine.root);
  root.append(line, stopError.root, body.root);
  el.append(root);

  const transcript = new Transcript(list, liveHost, {
    lang,
    agentName: () => state.part?.agent || "",
    path,
    nesting: options.nesting,
    onLiveChange: () => render(),
  });
  const key = pathKey(path);


  let stopping = false;
  const onStop = (event: MouseEvent) => {
    event.stopPropagation();
    const stopRun = options.nesting.stop;
    if (!stopRun || stopping) return;
    stopping = true;
    stopError.clear();
    render();
    stopRun(runId)
      .catch((error) => {
        stopping = false;
        stopError.show(error);
      })
      .finally(() => render());
  };
  stop.addEventListener("click", onStop);

  function status(): SubagentStatus {
    return normalizeStatus(state.part?.status);
  }

  function expanded(): boolean {
    return state.expanded ?? status() === "running";
  }

  function render(): void {
    const lang = state.lang;
    const part = state.part;
    const current = status();
    frame.setLang(lang);
    traceLine.set(state.trace, lang);
    frame.setStatus(current, STATUS_ICON[current]);
    agent.textContent = part?.agent || "?";
    task.textContent = part?.task ?? "";
    task.title = part?.task ?? "";
    const open = expanded();
    frame.setOpen(open);
    header.setAttribute("aria-label", t(lang, "subagent_title", { agent: part?.agent || "?" }));
    body.setOpen(open);

    const running = current === "running";
    statusTag.textContent = t(lang, STATUS_LABEL[current]);
    statusTag.className = `neta-tag neta-subagent-status${current === "done" ? " neta-tag-success" : current === "error" ? " neta-tag-error" : running ? "" : " neta-tag-muted"}`;
    const doing = running ? part?.activity : null;
    activity.textContent = doing ? t(lang, "subagent_activity", { name: doing }) : "";
    activity.hidden = !doing;
    const steps = part?.plan;
    plan.textContent = steps && steps.total > 0 ? t(lang, "subagent_plan", { done: steps.done, total: steps.total }) : "";
    plan.hidden = !plan.textContent;
    const used = part?.tokens;
    tokens.textContent = used && used.api_calls > 0 ? `↑${formatTokens(used.input_tokens)} ↓${formatTokens(used.output_tokens)}` : "";
    tokens.hidden = !tokens.textContent;
    stop.textContent = t(lang, "subagent_stop");
    stop.title = t(lang, "subagent_stop_hint", { agent: part?.agent || "?" });
    stop.hidden = !running || !options.nesting.stop;
    stop.disabled = stopping;

    older.textContent = t(lang, "subagent_older");
    older.hidden = !part?.has_older;
    empty.textContent = running ? t(lang, "working") : t(lang, "subagent_empty");
    empty.hidden = transcript.hasContent;
  }

  function showPart(part: SubagentPart): void {
    if (part.messages === null) return; // a streamed update: the transcript streams itself
    for (const item of part.messages) transcript.upsert(item);
    transcript.pruneTo(part.messages);
    transcript.showLive(part.live);
    transcript.mergeThinking();
  }

  const self: SubagentCard = {
    root,
    update(patch) {
      if (patch.lang !== undefined) {
        state.lang = normalizeLang(patch.lang);
        transcript.setLang(state.lang);
        stopError.clear();
      }
      if (patch.status !== undefined) state.status = normalizeRunStatus(patch.status);
      if (patch.expanded !== undefined) state.expanded = patch.expanded;
      if (patch.trace !== undefined) state.trace = patch.trace;
      if (patch.part !== undefined && patch.part !== null) {
        const before = status();
        state.part = { ...patch.part, messages: patch.part.messages };
        if (before === "running" && status() !== "running") stopping = false;
        showPart(patch.part);
      }
      render();
    },
    part() {
      const part = state.part;
      if (!part) return null;
      return { ...part, messages: transcript.allItems(), live: transcript.liveSnapshot() };
    },
    applyOps(ops) {
      for (const op of ops) transcript.apply(op);
      transcript.mergeThinking();
      render();
    },
    destroy() {
      if (options.nesting.cards.get(key) === self) options.nesting.cards.delete(key);
      stop.removeEventListener("click", onStop);
      traceLine.destroy();
      transcript.clear();
      frame.destroy();
    },
  };
  options.nesting.cards.set(key, self);
  render();
  return self;
}
