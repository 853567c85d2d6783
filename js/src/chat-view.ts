/**
 * The chat view (seed 002 §5.3, §6.3, §7.5, §9.2): the conversation, the plan card, the
 * streaming answer with its thinking block before the text, approval requests, and an input
 * bar with the agent and thinking-level selectors, token stats and Send / Stop.
 *
 * It composes the card components (todo, tool, skill, thinking block, token stats, level
 * selector) and knows nothing of anywidget: state arrives through `update(patch)` (keys are
 * the Python trait names), streamed changes through `applyOps(ops)`, a full resync through
 * `applySnapshot(snapshot)`; user actions go out through `options.actions`.
 *
 * Messages are keyed by id and updated in place: the streaming response becomes its final
 * message without being rebuilt, a skill card stays one DOM node from running to done, and
 * streamed text renders once per animation frame, re-rendering only the markdown after the
 * last finished block.
 */
import "./chat-view.css";
import { element } from "./dom";
import { normalizeLang, t, type Lang, type MessageKey } from "./i18n";
import { createInlineError } from "./inline-error";
import { createSkillCard, type SkillCardState } from "./skill-card";
import { StreamingMarkdown } from "./streaming-markdown";
import { createThinkingBlock, type ThinkingBlock } from "./thinking-block";
import { createThinkingLevelSelector, type ThinkLevel } from "./thinking-level-selector";
import { createTodoCard, type TodoItem } from "./todo-card";
import { createTokenStats, formatTokens, type ContextUsage, type TurnUsage } from "./token-stats";
import { createToolCard, type ToolCardState } from "./tool-card";
import type { Component, ComponentOptions } from "./types";

export interface ChatCard {
  kind: "tool" | "skill";
  id: string;
  name: string;
  label: string;
  status: "running" | "done" | "error";
  args?: Record<string, unknown>;
  result: string | null;
  percent?: number;
  step?: string | null;
  detail?: string | null;
}

export interface ChatItem {
  id: string;
  role: "user" | "assistant" | "compaction";
  index: number;
  pos: number;
  /** `null` in a streamed update: keep the text this view streamed. */
  text?: string | null;
  thinking?: string | null;
  cards?: ChatCard[];
  interrupted?: "cancelled" | "error" | "killed" | null;
  error?: string | null;
  tokens_before?: number;
  tokens_after?: number;
  messages_folded?: number;
}

export interface Approval {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export interface AgentChoice {
  name: string;
  model: string;
}

export interface ChatViewState {
  session_id: string;
  agent: AgentChoice;
  agents: AgentChoice[];
  messages: ChatItem[];
  has_older: boolean;
  todos: TodoItem[];
  current: TurnUsage | null;
  context: ContextUsage | null;
  running: boolean;
  think_level: string;
  levels: ThinkLevel[];
  approvals: Approval[];
  notice: string;
  height: string;
  lang: Lang;
}

export type ChatOp =
  | { op: "live"; id: string }
  | { op: "text"; text: string }
  | { op: "thinking"; text: string }
  | { op: "thinking_done" }
  | { op: "end"; id: string | null }
  | { op: "item"; item: ChatItem };

export interface LiveSnapshot {
  id: string;
  thinking: string;
  text: string;
  thinking_open: boolean;
}

export interface ChatSnapshot extends Partial<ChatViewState> {
  seq: number;
  live: LiveSnapshot | null;
}

export interface OlderPage {
  session_id: string;
  messages: ChatItem[];
  has_older: boolean;
}

export interface ChatActions {
  send(text: string): Promise<unknown>;
  stop(): Promise<unknown>;
  setLevel(level: string): Promise<unknown>;
  approve(id: string, decision: "allow_once" | "allow_always" | "reject"): Promise<unknown>;
  loadOlder(before: number): Promise<OlderPage>;
  switchAgent(name: string): Promise<unknown>;
}

export interface ChatViewOptions extends ComponentOptions<ChatViewState> {
  actions?: Partial<ChatActions>;
}

export interface ChatView extends Component<ChatViewState> {
  applyOps(ops: ChatOp[]): void;
  applySnapshot(snapshot: ChatSnapshot): void;
  /** The complete items with these ids as drawn now (streamed text filled in), or null
   * when one is unknown to this view. */
  items(ids: readonly string[]): ChatItem[] | null;
}

const CHAT_TEXT_CLASSES = {
  root: "neta-chat-text neta-markdown",
  stable: "neta-chat-text-stable",
  tail: "neta-chat-text-tail",
  cursor: "neta-chat-cursor",
};

const STICK_DISTANCE = 48; // px from the bottom that still counts as "following"
const OLDER_DISTANCE = 120; // px from the top at which older messages load

interface CardView {
  kind: "tool" | "skill";
  host: HTMLDivElement;
  component: Component<ToolCardState> | Component<SkillCardState>;
  signature: string;
}

/** One message (or the live response) in the list. */
class MessageView {
  readonly root: HTMLDivElement;
  pos: number;
  signature = "";
  /** The item as drawn, with streamed text filled in where the update said "keep". */
  item: ChatItem | null = null;
  private readonly lang: () => Lang;
  private thinking: ThinkingBlock | null = null;
  private thinkingHost: HTMLDivElement | null = null;
  private thinkingStreaming = false;
  private text: StreamingMarkdown | null = null;
  private cardsHost: HTMLDivElement | null = null;
  private readonly cards = new Map<string, CardView>();
  private status: HTMLDivElement | null = null;
  private userText: HTMLDivElement | null = null;
  private role: ChatItem["role"];

  constructor(role: ChatItem["role"], pos: number, lang: () => Lang, private readonly agentName: () => string) {
    this.role = role;
    this.pos = pos;
    this.lang = lang;
    this.root = element("div", `neta-chat-msg neta-chat-${role} neta-is-new`);
    this.root.dataset.pos = String(pos);
    // The entry animation plays once: filing the live response into the list moves its
    // node, which must not replay it.
    this.root.addEventListener("animationend", () => this.root.classList.remove("neta-is-new"), { once: true });
    if (role === "user") {
      this.userText = element("div", "neta-chat-bubble");
      this.root.append(this.userText);
    } else if (role === "assistant") {
      const header = element("div", "neta-chat-msg-header");
      const avatar = element("span", "neta-chat-avatar");
      avatar.setAttribute("aria-hidden", "true");
      header.append(avatar, element("span", "neta-chat-author", this.agentName()));
      this.thinkingHost = element("div", "neta-chat-thinking");
      this.text = new StreamingMarkdown(CHAT_TEXT_CLASSES);
      this.cardsHost = element("div", "neta-chat-cards");
      this.status = element("div", "neta-chat-status");
      this.status.hidden = true;
      this.root.append(header, this.thinkingHost, this.text.root, this.cardsHost, this.status);
    }
  }

  setPos(pos: number): void {
    this.pos = pos;
    this.root.dataset.pos = String(pos);
  }

  // --- streaming (the live response) --------------------------------------------------
  appendThinking(delta: string): void {
    const block = this.ensureThinking();
    if (!this.thinkingStreaming) {
      this.thinkingStreaming = true;
      block.update({ streaming: true });
    }
    block.append(delta);
  }

  thinkingDone(): void {
    if (!this.thinkingStreaming) return;
    this.thinkingStreaming = false;
    this.thinking?.update({ streaming: false });
  }

  appendText(delta: string): void {
    this.thinkingDone(); // the answer starts: thinking folds (seed §7.3)
    this.text?.append(delta);
  }

  private ensureThinking(): ThinkingBlock {
    if (!this.thinking && this.thinkingHost) {
      this.thinking = createThinkingBlock(this.thinkingHost, { lang: this.lang() });
    }
    return this.thinking as ThinkingBlock;
  }

  // --- whole state ----------------------------------------------------------------------
  update(update: ChatItem): void {
    const item: ChatItem = { ...update };
    if (item.role === "assistant") {
      if (item.text === null) item.text = this.text?.value ?? "";
      if (item.thinking === null) item.thinking = this.thinking?.text ?? "";
    }
    this.item = item;
    const signature = JSON.stringify(item);
    if (signature === this.signature) return;
    this.signature = signature;
    this.setPos(item.pos);
    const lang = this.lang();
    this.root.dataset.id = item.id;
    this.root.dataset.index = String(item.index);
    if (this.role === "user" && this.userText) {
      // What the user typed is shown as typed (plain text, never markup).
      this.userText.textContent = item.text ?? "";
      return;
    }
    if (this.role === "compaction") {
      this.root.replaceChildren(
        element(
          "span",
          "neta-chat-marker-text",
          t(lang, "compacted", {
            n: item.messages_folded ?? 0,
            before: formatTokens(item.tokens_before ?? 0),
            after: formatTokens(item.tokens_after ?? 0),
          }),
        ),
      );
      return;
    }
    const thinking = item.thinking ?? "";
    if (thinking) {
      const block = this.ensureThinking();
      this.thinkingStreaming = false;
      block.update({ text: thinking, streaming: false, lang });
    }
    this.text?.finish(item.text ?? "");
    this.updateCards(item.cards ?? [], lang);
    this.updateStatus(item, lang);
  }

  setLang(lang: Lang): void {
    this.thinking?.update({ lang });
    for (const card of this.cards.values()) card.component.update({ lang });
  }

  private updateCards(cards: ChatCard[], lang: Lang): void {
    const host = this.cardsHost;
    if (!host) return;
    const seen = new Set<string>();
    cards.forEach((card, position) => {
      seen.add(card.id);
      let view = this.cards.get(card.id);
      if (!view || view.kind !== card.kind) {
        view?.component.destroy();
        view?.host.remove();
        const cardHost = element("div", "neta-chat-card");
        const component =
          card.kind === "skill" ? createSkillCard(cardHost, { lang }) : createToolCard(cardHost, { lang });
        view = { kind: card.kind, host: cardHost, component, signature: "" };
        this.cards.set(card.id, view);
      }
      const signature = JSON.stringify(card);
      if (signature !== view.signature) {
        view.signature = signature;
        if (card.kind === "skill") {
          (view.component as Component<SkillCardState>).update({
            name: card.name,
            label: card.label,
            status: card.status,
            percent: card.percent ?? 0,
            step: card.step ?? null,
            detail: card.detail ?? null,
            result: card.result,
            lang,
          });
        } else {
          (view.component as Component<ToolCardState>).update({
            name: card.name,
            label: card.label,
            status: card.status,
            args: card.args ?? {},
            result: card.result,
            lang,
          });
        }
      }
      if (host.children[position] !== view.host) host.insertBefore(view.host, host.children[position] ?? null);
    });
    for (const [id, view] of this.cards) {
      if (!seen.has(id)) {
        view.component.destroy();
        view.host.remove();
        this.cards.delete(id);
      }
    }
  }

  private updateStatus(item: ChatItem, lang: Lang): void {
    const status = this.status;
    if (!status) return;
    const children: HTMLElement[] = [];
    if (item.interrupted === "cancelled") children.push(element("span", "neta-tag neta-chat-stopped", t(lang, "stopped")));
    if (item.interrupted === "killed") children.push(element("span", "neta-tag neta-tag-error", t(lang, "killed")));
    if (item.error) {
      const box = element("div", "neta-chat-error");
      box.append(element("span", "neta-chat-error-title", t(lang, "error")), element("span", "neta-chat-error-text", item.error));
      children.push(box);
    }
    status.replaceChildren(...children);
    status.hidden = children.length === 0;
  }

  destroy(): void {
    this.thinking?.destroy();
    this.text?.destroy();
    for (const card of this.cards.values()) card.component.destroy();
    this.root.remove();
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function createChatView(el: HTMLElement, options: ChatViewOptions = {}): ChatView {
  const actions = options.actions ?? {};
  const state: ChatViewState = {
    session_id: "",
    agent: { name: "", model: "" },
    agents: [],
    messages: [],
    has_older: false,
    todos: [],
    current: null,
    context: null,
    running: false,
    think_level: "",
    levels: [],
    approvals: [],
    notice: "",
    height: "640px",
    lang: normalizeLang(options.lang),
  };
  const lang = () => state.lang;
  const agentName = () => state.agent?.name || "Assistant";
  const label = (key: MessageKey, params?: Record<string, string | number>) => t(state.lang, key, params);

  // --- DOM --------------------------------------------------------------------------------
  const root = element("div", "neta-root neta-chat-view");
  const scroller = element("div", "neta-chat-scroll");
  const content = element("div", "neta-chat-content");
  const olderIndicator = element("div", "neta-chat-older");
  olderIndicator.hidden = true;
  const empty = element("div", "neta-chat-empty");
  const emptyTitle = element("div", "neta-chat-empty-title");
  const emptyHint = element("div", "neta-chat-empty-hint");
  empty.append(element("div", "neta-chat-empty-icon"), emptyTitle, emptyHint);
  const list = element("div", "neta-chat-list");
  const todoHost = element("div", "neta-chat-todo");
  const liveHost = element("div", "neta-chat-live");
  const approvalsHost = element("div", "neta-chat-approvals");
  const working = element("div", "neta-chat-working");
  const workingText = element("span", "neta-chat-working-text");
  working.append(element("span", "neta-chat-dots"), workingText);
  const notice = element("div", "neta-chat-notice");
  // Failed requests show next to what the user clicked (see inline-error.ts).
  const olderError = createInlineError(lang, "neta-chat-older-error");
  const inputError = createInlineError(lang);
  content.append(olderIndicator, olderError.root, empty, list, todoHost, liveHost, approvalsHost, working, notice);
  scroller.append(content);

  const inputBar = element("div", "neta-chat-input");
  const textarea = element("textarea", "neta-chat-textarea");
  textarea.rows = 2;
  const toolbar = element("div", "neta-chat-toolbar");
  const agentSelect = element("select", "neta-chat-agent-select");
  const agentWrap = element("label", "neta-chat-agent");
  agentWrap.append(element("span", "neta-chat-agent-dot"), agentSelect);
  const levelHost = element("div", "neta-chat-level");
  const spacer = element("div", "neta-chat-spacer");
  const statsHost = element("div", "neta-chat-stats");
  const sendButton = element("button", "neta-chat-send");
  sendButton.type = "button";
  toolbar.append(agentWrap, levelHost, spacer, statsHost, sendButton);
  inputBar.append(inputError.root, textarea, toolbar);
  root.append(scroller, inputBar);
  el.append(root);

  const todoCard = createTodoCard(todoHost, { lang: state.lang });
  const levelSelector = createThinkingLevelSelector(levelHost, {
    lang: state.lang,
    onUserChange: (patch) => {
      if (patch.level === undefined) return;
      state.think_level = patch.level;
      inputError.clear();
      void actions.setLevel?.(patch.level).catch(inputError.show);
    },
  });
  const tokenStats = createTokenStats(statsHost, { lang: state.lang });

  const views = new Map<string, MessageView>();
  let live: MessageView | null = null;
  let loadingOlder = false;
  let olderRequested = false;
  let stuck = true;

  // --- scrolling ------------------------------------------------------------------------
  const onScroll = () => {
    stuck = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < STICK_DISTANCE;
    if (scroller.scrollTop < OLDER_DISTANCE) void loadOlder();
  };
  scroller.addEventListener("scroll", onScroll, { passive: true });
  // Content grows as text streams (rendered per frame): follow it while the user is at
  // the bottom, leave them alone when they scrolled up to read.
  const resizeObserver = new ResizeObserver(() => {
    if (stuck) scroller.scrollTop = scroller.scrollHeight;
  });
  resizeObserver.observe(content);

  async function loadOlder(): Promise<void> {
    if (loadingOlder || !state.has_older || !actions.loadOlder || !olderRequested) return;
    const first = firstIndex();
    if (first === null) return;
    loadingOlder = true;
    olderIndicator.hidden = false;
    olderError.clear();
    const session = state.session_id;
    try {
      const page = await actions.loadOlder(first);
      if (page.session_id !== state.session_id || session !== state.session_id) return;
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      for (const item of page.messages) upsert(item);
      state.has_older = page.has_older;
      scroller.scrollTop = scroller.scrollHeight - fromBottom; // keep the reader's place
    } catch (error) {
      olderError.show(error);
    } finally {
      loadingOlder = false;
      olderIndicator.hidden = true;
    }
  }

  function firstIndex(): number | null {
    let first: number | null = null;
    for (const view of views.values()) {
      const index = Number(view.root.dataset.index);
      if (Number.isFinite(index) && (first === null || index < first)) first = index;
    }
    return first;
  }

  // --- messages -------------------------------------------------------------------------
  function insertByPos(view: MessageView): void {
    const last = list.lastElementChild as HTMLElement | null;
    if (!last || Number(last.dataset.pos) <= view.pos) {
      list.append(view.root);
      return;
    }
    for (const child of Array.from(list.children) as HTMLElement[]) {
      if (child !== view.root && Number(child.dataset.pos) > view.pos) {
        list.insertBefore(view.root, child);
        return;
      }
    }
    list.append(view.root);
  }

  function upsert(item: ChatItem): void {
    let view = views.get(item.id);
    if (!view) {
      view = new MessageView(item.role, item.pos, lang, agentName);
      views.set(item.id, view);
      view.update(item);
      insertByPos(view);
    } else {
      const moved = view.pos !== item.pos;
      view.update(item);
      if (moved) insertByPos(view);
    }
  }

  function startLive(id: string): MessageView {
    if (live) endLive(null);
    live = new MessageView("assistant", Number.MAX_SAFE_INTEGER, lang, agentName);
    live.root.dataset.id = id;
    live.root.classList.add("neta-is-live");
    liveHost.append(live.root);
    renderChrome();
    return live;
  }

  function endLive(id: string | null): void {
    const view = live;
    live = null;
    if (!view) return;
    view.root.classList.remove("neta-is-live");
    if (id === null || views.has(id)) {
      view.destroy();
    } else {
      // The streamed response is now this message: same DOM, filed into the list.
      views.set(id, view);
      insertByPos(view);
    }
    renderChrome();
  }

  function clearAll(): void {
    for (const view of views.values()) view.destroy();
    views.clear();
    live?.destroy();
    live = null;
    olderRequested = false;
    olderError.clear();
    inputError.clear();
  }

  // --- chrome ---------------------------------------------------------------------------
  function renderApprovals(): void {
    approvalsHost.replaceChildren(
      ...state.approvals.map((approval) => {
        const card = element("div", "neta-card neta-chat-approval");
        card.dataset.id = approval.id;
        const title = element("div", "neta-chat-approval-title");
        title.append(element("span", "neta-chat-approval-icon"), element("span", undefined, label("approval_title", { name: approval.name })));
        const hint = element("div", "neta-chat-approval-hint", label("approval_hint"));
        const args = element("pre", "neta-chat-approval-args", JSON.stringify(approval.args ?? {}, null, 2));
        const buttons = element("div", "neta-chat-approval-buttons");
        const cardError = createInlineError(lang);
        const decisions: ["allow_once" | "allow_always" | "reject", MessageKey, string][] = [
          ["allow_once", "allow_once", "neta-chat-button-primary"],
          ["allow_always", "allow_always", ""],
          ["reject", "reject", "neta-chat-button-danger"],
        ];
        for (const [decision, key, extra] of decisions) {
          const button = element("button", `neta-chat-button ${extra}`.trim(), label(key));
          button.type = "button";
          button.dataset.decision = decision;
          button.addEventListener("click", () => {
            for (const other of Array.from(buttons.querySelectorAll("button"))) other.disabled = true;
            cardError.clear();
            void actions.approve?.(approval.id, decision).catch((error) => {
              for (const other of Array.from(buttons.querySelectorAll("button"))) other.disabled = false;
              cardError.show(error);
            });
          });
          buttons.append(button);
        }
        card.append(title, hint, args, buttons, cardError.root);
        return card;
      }),
    );
  }

  function renderAgents(): void {
    const choices = state.agents.length ? state.agents : [state.agent];
    const wanted = choices.map((choice) => `${choice.name}|${choice.model}`).join("\n");
    if (agentSelect.dataset.options !== wanted) {
      agentSelect.replaceChildren(
        ...choices.map((choice) => {
          const option = element("option", undefined, choice.name);
          option.value = choice.name;
          option.title = choice.model;
          return option;
        }),
      );
      agentSelect.dataset.options = wanted;
    }
    agentSelect.value = state.agent.name;
    agentSelect.disabled = choices.length <= 1 || state.running;
    agentWrap.title = `${label("agent")}: ${state.agent.name} · ${state.agent.model}`;
  }

  function renderChrome(): void {
    const lang = state.lang;
    root.lang = lang;
    root.style.setProperty("--neta-chat-height", state.height || "640px");
    root.classList.toggle("neta-is-running", state.running);
    const hasContent = views.size > 0 || live !== null;
    empty.hidden = hasContent || state.running;
    emptyTitle.textContent = label("empty_title");
    emptyHint.textContent = label("empty_hint", { agent: agentName() });
    olderIndicator.textContent = label("loading_older");
    working.hidden = !state.running || live !== null || state.approvals.length > 0;
    workingText.textContent = label("working");
    notice.hidden = !state.notice;
    notice.textContent = state.notice;
    textarea.placeholder = label("placeholder", { agent: agentName() });
    textarea.setAttribute("aria-label", label("placeholder", { agent: agentName() }));
    sendButton.textContent = label(state.running ? "stop" : "send");
    sendButton.classList.toggle("neta-is-stop", state.running);
    sendButton.disabled = !state.running && textarea.value.trim() === "";
    renderAgents();
  }

  // --- input ----------------------------------------------------------------------------
  function send(): void {
    const text = textarea.value.trim();
    if (!text || state.running || !actions.send) return;
    const typed = textarea.value;
    textarea.value = "";
    inputError.clear();
    stuck = true;
    autosize();
    renderChrome();
    actions.send(text).catch((error) => {
      textarea.value = typed; // nothing was sent: give the text back
      autosize();
      inputError.show(error);
      renderChrome();
    });
  }

  function autosize(): void {
    textarea.style.height = "auto";
    textarea.style.height = `${Math.min(textarea.scrollHeight, 160)}px`;
  }

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  };
  const onInput = () => {
    autosize();
    sendButton.disabled = !state.running && textarea.value.trim() === "";
  };
  const onSendClick = () => {
    if (state.running) {
      sendButton.disabled = true;
      inputError.clear();
      void actions.stop?.().catch(inputError.show).finally(() => renderChrome());
    } else {
      send();
    }
  };
  const onAgentChange = () => {
    if (agentSelect.value !== state.agent.name) {
      inputError.clear();
      void actions.switchAgent?.(agentSelect.value).catch((error) => {
        agentSelect.value = state.agent.name;
        inputError.show(error);
      });
    }
  };
  textarea.addEventListener("keydown", onKeyDown);
  textarea.addEventListener("input", onInput);
  sendButton.addEventListener("click", onSendClick);
  agentSelect.addEventListener("change", onAgentChange);

  renderChrome();

  return {
    update(patch) {
      if (patch.lang !== undefined) {
        state.lang = normalizeLang(patch.lang);
        for (const view of views.values()) view.setLang(state.lang);
        todoCard.update({ lang: state.lang });
        levelSelector.update({ lang: state.lang });
        tokenStats.update({ lang: state.lang });
      }
      if (patch.session_id !== undefined && patch.session_id !== state.session_id) {
        clearAll();
        state.session_id = patch.session_id;
        stuck = true;
      }
      if (patch.agent !== undefined && patch.agent) state.agent = patch.agent;
      if (patch.agents !== undefined) state.agents = Array.isArray(patch.agents) ? patch.agents : [];
      if (patch.height !== undefined) state.height = patch.height;
      if (patch.has_older !== undefined) state.has_older = Boolean(patch.has_older);
      if (patch.messages !== undefined) {
        state.messages = Array.isArray(patch.messages) ? patch.messages : [];
        for (const item of state.messages) upsert(item);
        // Older pages load on scroll only once the window has been drawn.
        requestAnimationFrame(() => {
          olderRequested = true;
        });
      }
      if (patch.todos !== undefined) {
        state.todos = Array.isArray(patch.todos) ? patch.todos : [];
        todoCard.update({ todos: state.todos });
        todoHost.hidden = state.todos.length === 0;
      }
      if (patch.running !== undefined) state.running = Boolean(patch.running);
      if (patch.current !== undefined || patch.context !== undefined || patch.running !== undefined) {
        if (patch.current !== undefined) state.current = patch.current;
        if (patch.context !== undefined) state.context = patch.context;
        tokenStats.update({ current: state.current, context: state.context, running: state.running });
      }
      if (patch.levels !== undefined || patch.think_level !== undefined) {
        if (patch.levels !== undefined) state.levels = Array.isArray(patch.levels) ? patch.levels : [];
        if (patch.think_level !== undefined) state.think_level = patch.think_level;
        levelSelector.update({ levels: state.levels, level: state.think_level as ThinkLevel });
      }
      if (patch.approvals !== undefined && !sameJson(patch.approvals, state.approvals)) {
        state.approvals = Array.isArray(patch.approvals) ? patch.approvals : [];
        renderApprovals();
      }
      if (patch.notice !== undefined) state.notice = patch.notice;
      renderChrome();
    },
    applyOps(ops) {
      for (const op of ops) {
        switch (op.op) {
          case "live":
            startLive(op.id);
            break;
          case "thinking":
            (live ?? startLive("live")).appendThinking(op.text);
            break;
          case "thinking_done":
            live?.thinkingDone();
            break;
          case "text":
            (live ?? startLive("live")).appendText(op.text);
            break;
          case "end":
            endLive(op.id);
            break;
          case "item":
            upsert(op.item);
            break;
        }
      }
    },
    applySnapshot(snapshot) {
      const { seq: _seq, live: liveSnapshot, ...rest } = snapshot;
      if (live) {
        live.destroy();
        live = null;
      }
      this.update(rest);
      if (liveSnapshot) {
        const view = startLive(liveSnapshot.id);
        if (liveSnapshot.thinking) {
          view.appendThinking(liveSnapshot.thinking);
          if (!liveSnapshot.thinking_open) view.thinkingDone();
        }
        if (liveSnapshot.text) view.appendText(liveSnapshot.text);
      }
      renderChrome();
    },
    items(ids) {
      const found: ChatItem[] = [];
      for (const id of ids) {
        const item = views.get(id)?.item;
        if (!item) return null;
        found.push(item);
      }
      return found;
    },
    destroy() {
      scroller.removeEventListener("scroll", onScroll);
      resizeObserver.disconnect();
      textarea.removeEventListener("keydown", onKeyDown);
      textarea.removeEventListener("input", onInput);
      sendButton.removeEventListener("click", onSendClick);
      agentSelect.removeEventListener("change", onAgentChange);
      clearAll();
      todoCard.destroy();
      levelSelector.destroy();
      tokenStats.destroy();
      root.remove();
    },
  };
}
