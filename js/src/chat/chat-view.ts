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
 * Messages are keyed by id and updated in place (`chat-message-view.ts`), the input bar is
 * `input-bar.ts`, an approval request's card `approval-cards.ts`; the wire format lives in
 * `chat-view-traits.ts`, beside the Python side it mirrors (`widgets/chat/wire.py`). The
 * header (`chat-header.ts`) opens the list of chats and the tool panel in a drawer
 * (`chat-drawer.ts`) and the chat in a side panel (`side-panel.ts`); a turn that starts
 * where no view of it shows is brought on screen (`keep-in-view.ts`).
 */
import { createApprovalCards } from "./approval-cards";
import { createChatDrawer, type DrawerLoad } from "./chat-drawer";
import { createChatHeader, type DrawerName } from "./chat-header";
import "./chat-view.css";
import { createReadOnlyBar } from "./chat-read-only";
import { createCellChip, MAX_CHIP_CELLS } from "./cell-chip";
import { createInputBar } from "./input-bar";
import { watchTurns } from "./keep-in-view";
import { openSidePanel, sidePanelOffered } from "./side-panel";
import { applyNestedOps, Transcript, type Nesting } from "./chat-transcript";
import type { MessageActionRequest } from "./message-actions";
import { notebookBridgePresent } from "./notebook-bridge";
import { createRestoreNotice } from "./notebook-restore";
import type { ChatItem, ChatOp, ChatSnapshot, ChatViewState, FullTextRequest, OlderPage } from "./chat-view-traits";
import { element, whileBusy } from "../dom";
import { normalizeLang, t, type MessageKey } from "../i18n";
import { createInlineError } from "../inline-error";
import { createThinkingLevelSelector, type ThinkLevel } from "../cards/thinking-level-selector";
import { createSubagentCard } from "../cards/subagent-card";
import { createTodoCard } from "../cards/todo-card";
import { createTokenStats } from "../cards/token-stats";
import type { Component, ComponentOptions } from "../types";

export type {
  AgentChoice,
  Approval,
  ChatCard,
  ChatItem,
  ChatOp,
  ChatSnapshot,
  ChatViewState,
  LiveSnapshot,
  OlderPage,
  ReadOnlyState,
} from "./chat-view-traits";

export interface ChatActions {
  /** Send a prompt with the files attached to it (possibly none) and the ids of the
   * cells the context chip attaches (./cell-chip.ts). */
  send(text: string, files: File[], cells?: string[]): Promise<unknown>;
  stop(): Promise<unknown>;
  setLevel(level: string): Promise<unknown>;
  /** `path`: the sub-agent runs the request came through (`[]`: the session's own); two
   * children's calls can share an id, the path says whose call is answered. */
  approve(id: string, decision: "allow_once" | "allow_always" | "reject", path: string[], text?: string, client?: string): Promise<unknown>;
  /** Stop only this sub-agent (its run id: the `delegate` call's), the parent goes on. */
  stopSubagent(runId: string): Promise<unknown>;
  loadOlder(before: number): Promise<OlderPage>;
  switchAgent(name: string): Promise<unknown>;
  /** An outside agent's session mode (./agent-controls.ts). */
  setMode(mode: string): Promise<unknown>;
  /** The whole of a text the state holds a preview of. */
  fetchWhole(request: FullTextRequest): Promise<string>;
  /** Read a session shown read-only again / continue it here once its turn has ended. */
  refresh(): Promise<unknown>;
  takeOver(): Promise<unknown>;
  /** Show again the chat the fork shown was made from. */
  backFromFork(): Promise<unknown>;
  /** Retry, edit, rewind or fork at a message (./message-actions.ts). */
  messageAction(request: MessageActionRequest): Promise<unknown>;
  /** Draw the list of chats or the agent's tool panel in `host` (the header's drawer). */
  openDrawer(name: DrawerName, host: HTMLElement, signal: AbortSignal): ReturnType<DrawerLoad>;
  /** The id of this chat's widget model, which a side panel shows. */
  sidePanelModel(): Promise<string>;
}

export interface ChatViewOptions extends ComponentOptions<ChatViewState> {
  actions?: Partial<ChatActions>;
  /**
   * false: no kernel backs this view (saved widget state only: an exported HTML page, a
   * notebook reopened without its kernel). The conversation shows as it was saved,
   * read-only: a note and the token figures in place of the input, nothing spins (a turn
   * saved mid-run is not running here), no approval waits for a click. The actions given
   * are the caller's choice (the binding keeps only "Show all", which explains itself).
   */
  kernel?: boolean;
}

export interface ChatView extends Component<ChatViewState> {
  /** Apply streamed ops; false when one names a sub-agent card this view does not have
   * (the caller resyncs). */
  applyOps(ops: ChatOp[]): boolean;
  applySnapshot(snapshot: ChatSnapshot): void;
  /** The complete items with these ids as drawn now (streamed text filled in), or null
   * when one is unknown to this view. */
  items(ids: readonly string[]): ChatItem[] | null;
}

const STICK_DISTANCE = 48; // px from the bottom that still counts as "following"
const OLDER_DISTANCE = 120; // px from the top at which older messages load
const BY_HAND_MS = 800; // a scroll this soon after the reader's wheel, touch or key is theirs

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function createChatView(el: HTMLElement, options: ChatViewOptions = {}): ChatView {
  const actions = options.actions ?? {};
  const saved = options.kernel === false;
  const state: ChatViewState = {
    session_id: "",
    rewinds: 0,
    keeps_branches: true,
    fork_of: "",
    notebook_restore: {},
    hosts_outside: true,
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
    agent_commands: [],
    agent_modes: [],
    agent_mode: "",
    mode_error: "",
    store_warning: "",
    notice: "",
    notice_tone: "error",
    height: "640px",
    lang: normalizeLang(options.lang),
    read_only: null,
    attachment_limits: null,
  };
  const lang = () => state.lang;
  const agentName = () => state.agent?.name || "Assistant";
  const label = (key: MessageKey, params?: Record<string, string | number>) => t(state.lang, key, params);

  // --- DOM --------------------------------------------------------------------------------
  const root = element("div", "neta-root neta-chat-view");
  const header = createChatHeader({
    label,
    drawers: !saved && actions.openDrawer !== undefined,
    sidePanel: !saved && actions.sidePanelModel !== undefined && sidePanelOffered(),
    onDrawer: (name) => toggleDrawer(name),
    onSidePanel: (button) => {
      const modelId = actions.sidePanelModel;
      if (!modelId) return;
      inputError.clear();
      whileBusy([button], async () => openSidePanel(button, await modelId()), inputError.show);
    },
  });
  const drawer = createChatDrawer<DrawerName>({ lang, label, onClosed: () => header.setOpen(null) });
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
  // Above the input, not in the scrolling transcript: it concerns everything shown.
  // A fork made here says so, with the way back to the chat it came from.
  const forkBar = element("div", "neta-chat-fork-bar");
  forkBar.setAttribute("role", "status");
  const forkText = element("span", "neta-chat-fork-text");
  const forkBack = element("button", "neta-chat-button neta-chat-fork-back");
  forkBack.type = "button";
  forkBar.append(forkText, forkBack);
  const onForkBack = () => {
    const back = actions.backFromFork;
    if (back) whileBusy([forkBack], back, (error: unknown) => inputError.show(error));
  };
  forkBack.addEventListener("click", onForkBack);
  // What a rewind or fork that put the notebook back did (./notebook-restore.ts).
  const restoreNotice = createRestoreNotice(lang);
  const storeWarning = element("div", "neta-chat-store-warning");
  storeWarning.setAttribute("role", "status");
  // Failed requests show next to what the user clicked (see inline-error.ts).
  const olderError = createInlineError(lang, "neta-chat-older-error");
  const inputError = createInlineError(lang);
  // The plan follows everything drawn of the conversation, the live response and the
  // approvals included: a response that settles into the list moves nothing, where a plan
  // between the list and the live response jumped below each response as it settled.
  content.append(olderIndicator, olderError.root, empty, list, liveHost, approvalsHost, todoHost, working, notice);
  scroller.append(content);

  // The active cell (or selection) as context, above the input (./cell-chip.ts); a sent
  // prompt carries its cells.
  const chip = createCellChip(root, lang);
  const chipHost = element("div", "neta-cell-chip-host");
  chipHost.append(chip.root);
  const inputActions: Partial<ChatActions> = Object.create(actions);
  const send = actions.send;
  if (send) {
    inputActions.send = (text, files) => {
      const cells = chip.cells();
      // The kernel refuses more too, in words for the wire: these are the user's.
      if (cells.length > MAX_CHIP_CELLS) return Promise.reject(new Error(label("cell_chip_too_many_send", { count: cells.length, max: MAX_CHIP_CELLS })));
      return send(text, files, cells);
    };
  }
  const input = createInputBar({
    saved,
    state,
    actions: inputActions,
    lang,
    label,
    agentName,
    dropTarget: root,
    error: inputError,
    onSent: () => {
      stuck = true;
      restoreNotice.clear();
    },
    onChange: () => renderChrome(),
  });
  const { root: inputBar, levelHost, statsHost, attachments } = input;
  const readOnlyBar = createReadOnlyBar(lang, {
    refresh: actions.refresh,
    takeOver: actions.takeOver,
  });
  root.append(header.root, forkBar, scroller, restoreNotice.root, storeWarning, chipHost, inputBar, readOnlyBar.root, drawer.root);
  el.append(root);

  function toggleDrawer(name: DrawerName): void {
    const open = actions.openDrawer;
    if (!open || drawer.open === name) {
      drawer.close();
      return;
    }
    drawer.show(name, name === "sessions" ? "chats" : "panel_title", (host, signal) => open(name, host, signal));
    header.setOpen(name);
  }

  // A turn that starts where no view of this chat shows is brought on screen, once.
  const turns = saved ? null : watchTurns({
    session: () => state.session_id,
    running: () => state.running,
    hostsOutside: () => state.hosts_outside,
    root,
    transcript: scroller,
  });

  const todoCard = createTodoCard(todoHost, { lang: state.lang });
  todoCard.update({ paused: true });
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
  if (saved) levelSelector.update({ disabled: true });

  const nesting: Nesting = {
    cards: new Map(),
    createCard: createSubagentCard,
    stop: actions.stopSubagent,
    fetchWhole: actions.fetchWhole,
    messageActions: actions.messageAction && !saved
      ? {
          lang,
          act: actions.messageAction,
          onError: (error: unknown) => inputError.show(error),
          onRewound: (text: string) => input.putBack(text),
          keepsBranches: () => state.keeps_branches,
          onNotebookPage: notebookBridgePresent,
          changesAfter: (id: string) => transcript.acceptedChangesAfter(id),
          onNotebookRestored: (outcome: unknown) => restoreNotice.show(outcome),
        }
      : undefined,
  };
  const transcript = new Transcript(list, liveHost, {
    lang,
    agentName,
    path: [],
    nesting,
    onLiveChange: () => renderChrome(),
    scroller,
    // Messages drawn again show a call waiting for approval as the others do.
    onDrawn: () => {
      if (state.approvals.length > 0) hideAskedCards();
    },
  });
  const upsert = (item: ChatItem) => transcript.upsert(item);
  const mergeThinking = () => transcript.mergeThinking();
  let loadingOlder = false;
  let olderRequested = false;
  let stuck = true;

  // --- scrolling ------------------------------------------------------------------------
  // Following the answer stops when the reader scrolls up by hand (wheel, touch, keys, the
  // scrollbar), and starts again at the bottom. A scroll the layout makes is no reason to
  // stop: a block folding clamps the position, and its scroll event can arrive after more
  // text has come (JupyterLab delays resize callbacks while its notebook scrolls), which
  // looked like a reader who had scrolled up.
  let lastTop = 0;
  let byHandAt = Number.NEGATIVE_INFINITY;
  const byHand = () => {
    byHandAt = performance.now();
  };
  const onPointerMove = (event: PointerEvent) => {
    if (event.buttons) byHand();
  };
  const onScroll = () => {
    const top = scroller.scrollTop;
    if (scroller.scrollHeight - top - scroller.clientHeight < STICK_DISTANCE) stuck = true;
    else if (top < lastTop && performance.now() - byHandAt < BY_HAND_MS) stuck = false;
    lastTop = top;
    if (top < OLDER_DISTANCE) void loadOlder();
  };
  scroller.addEventListener("scroll", onScroll, { passive: true });
  for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) {
    scroller.addEventListener(type, byHand, { passive: true });
  }
  scroller.addEventListener("pointermove", onPointerMove, { passive: true });
  // Content grows as text streams (rendered per frame): follow it while the user is at
  // the bottom, leave them alone when they scrolled up to read.
  const resizeObserver = new ResizeObserver(() => {
    if (stuck) scroller.scrollTop = scroller.scrollHeight;
  });
  resizeObserver.observe(content);

  async function loadOlder(): Promise<void> {
    if (loadingOlder || !state.has_older || !actions.loadOlder || !olderRequested) return;
    const first = transcript.firstIndex();
    if (first === null) return;
    loadingOlder = true;
    olderIndicator.hidden = false;
    olderError.clear();
    const session = state.session_id;
    try {
      const page = await actions.loadOlder(first);
      if (page.session_id !== state.session_id || session !== state.session_id) return;
      // Filed above what is drawn, the reader's place kept; the window draws those that
      // come near the viewport (./transcript-window.ts).
      transcript.window.keepPlace(() => {
        for (const item of page.messages) upsert(item);
        mergeThinking();
      });
      state.has_older = page.has_older;
    } catch (error) {
      olderError.show(error);
    } finally {
      loadingOlder = false;
      olderIndicator.hidden = true;
    }
  }

  // --- messages -------------------------------------------------------------------------
  function clearAll(): void {
    transcript.clear();
    olderRequested = false;
    olderError.clear();
    inputError.clear();
  }

  // --- chrome ---------------------------------------------------------------------------
  function renderApprovals(): void {
    approvalsHost.replaceChildren(...createApprovalCards(state.approvals, { lang, label, approve: actions.approve }));
    hideAskedCards();
  }

  /** A call waiting for the user's decision is shown once, as its approval card (which
   * says what it will run): its tool card, "waiting" in the answer above, comes back with
   * the decision. */
  function hideAskedCards(): void {
    // An outside client's request has no card in this chat's answers to stand for.
    const asked = new Set(state.approvals.filter((approval) => !approval.client).map((approval) => approval.id));
    for (const host of Array.from(content.querySelectorAll<HTMLElement>(".neta-chat-card[data-call-id]"))) {
      const hide = host.dataset.status === "waiting" && asked.has(host.dataset.callId ?? "");
      host.classList.toggle("neta-is-asked", hide);
    }
  }

  function renderChrome(): void {
    const lang = state.lang;
    root.lang = lang;
    root.style.setProperty("--neta-chat-height", state.height || "640px");
    root.classList.toggle("neta-is-running", state.running);
    const hasContent = transcript.hasContent;
    empty.hidden = hasContent || state.running;
    emptyTitle.textContent = label("empty_title");
    emptyHint.textContent = label("empty_hint", { agent: agentName() });
    olderIndicator.textContent = label("loading_older");
    working.hidden = !state.running || transcript.live !== null || state.approvals.length > 0;
    workingText.textContent = label("working");
    notice.hidden = !state.notice;
    notice.textContent = state.notice;
    notice.classList.toggle("neta-is-warning", state.notice_tone === "warning");
    storeWarning.hidden = !state.store_warning;
    forkBar.hidden = saved || !state.fork_of || !actions.backFromFork;
    forkText.textContent = label("fork_marker");
    forkBack.textContent = label("fork_back");
    storeWarning.textContent = state.store_warning;
    input.render();
    header.render({ name: agentName(), model: state.agent?.model ?? "" });
    drawer.render();
    // Read-only: the read-only bar replaces the input; nothing is sent from here. Its
    // Refresh and Continue ask a kernel: a saved view keeps its own note instead.
    inputBar.hidden = !saved && state.read_only !== null;
    chipHost.hidden = saved || inputBar.hidden;
    readOnlyBar.update(saved ? null : state.read_only);
    root.classList.toggle("neta-is-read-only", saved || state.read_only !== null);
    root.classList.toggle("neta-is-saved", saved);
  }

  renderChrome();

  return {
    update(patch) {
      if (patch.lang !== undefined) {
        state.lang = normalizeLang(patch.lang);
        transcript.setLang(state.lang);
        todoCard.update({ lang: state.lang });
        readOnlyBar.setLang();
        levelSelector.update({ lang: state.lang });
        tokenStats.update({ lang: state.lang });
      }
      if (patch.session_id !== undefined && patch.session_id !== state.session_id) {
        clearAll();
        state.session_id = patch.session_id;
        stuck = true;
        drawer.close(); // a chat opened from the list shows at once; a tool panel was the other's
      }
      if (patch.rewinds !== undefined && patch.rewinds !== state.rewinds) {
        clearAll(); // the same session, another history: nothing drawn stays
        state.rewinds = Number(patch.rewinds) || 0;
        stuck = true;
      }
      if (patch.keeps_branches !== undefined) state.keeps_branches = patch.keeps_branches !== false;
      if (patch.fork_of !== undefined) state.fork_of = String(patch.fork_of ?? "");
      if (patch.notebook_restore !== undefined) {
        state.notebook_restore = patch.notebook_restore ?? {};
        if (Object.keys(state.notebook_restore).length) restoreNotice.show(state.notebook_restore);
        else restoreNotice.clear();
      }
      if (patch.hosts_outside !== undefined) state.hosts_outside = patch.hosts_outside !== false;
      if (patch.agent !== undefined && patch.agent) state.agent = patch.agent;
      if (patch.agents !== undefined) state.agents = Array.isArray(patch.agents) ? patch.agents : [];
      if (patch.height !== undefined) state.height = patch.height;
      if (patch.attachment_limits !== undefined) {
        state.attachment_limits = patch.attachment_limits;
        attachments.setLimits(patch.attachment_limits);
      }
      if (patch.has_older !== undefined) state.has_older = Boolean(patch.has_older);
      let prune = false;
      if (patch.read_only !== undefined) {
        const next = patch.read_only && typeof patch.read_only === "object" && "busy" in patch.read_only ? patch.read_only : null;
        // Entering or leaving read-only keeps the session id: what was drawn is replaced.
        prune = (next === null) !== (state.read_only === null);
        state.read_only = next;
      }
      if (patch.messages !== undefined) {
        state.messages = Array.isArray(patch.messages) ? patch.messages : [];
        // A reread of another kernel's session is the whole picture: the draft it was
        // streaming may have become a message with another id.
        prune = prune || state.read_only !== null;
        for (const item of state.messages) upsert(item);
        // Older pages load on scroll only once the window has been drawn.
        requestAnimationFrame(() => {
          olderRequested = true;
        });
      }
      if (prune) transcript.pruneTo(state.messages);
      if (patch.todos !== undefined) {
        state.todos = Array.isArray(patch.todos) ? patch.todos : [];
        todoCard.update({ todos: state.todos });
        todoHost.hidden = state.todos.length === 0;
      }
      if (patch.running !== undefined) {
        state.running = !saved && Boolean(patch.running);
        // Seed 002 §9.2: the level is chosen between turns. And a plan step only spins
        // while a turn works on it: after Stop it shows as paused.
        levelSelector.update({ disabled: saved || state.running });
        todoCard.update({ paused: !state.running });
        turns?.running(state.running);
      }
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
        state.approvals = !saved && Array.isArray(patch.approvals) ? patch.approvals : [];
        renderApprovals();
      }
      if (patch.agent_commands !== undefined) state.agent_commands = Array.isArray(patch.agent_commands) ? patch.agent_commands : [];
      if (patch.agent_modes !== undefined) state.agent_modes = Array.isArray(patch.agent_modes) ? patch.agent_modes : [];
      if (patch.agent_mode !== undefined) state.agent_mode = String(patch.agent_mode ?? "");
      if (patch.mode_error !== undefined) state.mode_error = String(patch.mode_error ?? "");
      if (patch.notice !== undefined) state.notice = patch.notice;
      if (patch.notice_tone !== undefined) state.notice_tone = patch.notice_tone === "warning" ? "warning" : "error";
      if (patch.store_warning !== undefined) state.store_warning = patch.store_warning;
      if (state.approvals.length > 0) hideAskedCards();
      mergeThinking();
      renderChrome();
    },
    applyOps(ops) {
      let complete = true;
      let topLevel = false;
      for (const op of ops) {
        if (op.path && op.path.length > 0) {
          // A sub-agent's: into its card (one not drawn here: the snapshot will have it).
          complete = applyNestedOps(nesting, [op]) && complete;
        } else {
          transcript.apply(op);
          topLevel = true;
        }
      }
      if (topLevel) mergeThinking();
      if (state.approvals.length > 0) hideAskedCards();
      return complete;
    },
    applySnapshot(snapshot) {
      const { seq: _seq, live: liveSnapshot, ...rest } = snapshot;
      // The response this view streamed may be a message by now: it stays, whole.
      if (rest.session_id === state.session_id) transcript.settleLive(rest.messages, liveSnapshot);
      transcript.showLive(null);
      this.update(rest);
      if (liveSnapshot) transcript.showLive(liveSnapshot);
      mergeThinking();
      renderChrome();
    },
    items(ids) {
      return transcript.items(ids);
    },
    destroy() {
      turns?.dispose();
      drawer.destroy();
      header.destroy();
      scroller.removeEventListener("scroll", onScroll);
      forkBack.removeEventListener("click", onForkBack);
      for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) scroller.removeEventListener(type, byHand);
      scroller.removeEventListener("pointermove", onPointerMove);
      resizeObserver.disconnect();
      input.destroy();
      chip.destroy();
      clearAll();
      transcript.destroy();
      todoCard.destroy();
      levelSelector.destroy();
      tokenStats.destroy();
      readOnlyBar.destroy();
      root.remove();
    },
  };
}
