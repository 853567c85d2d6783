/**
 * A list of messages and the response being streamed, drawn from `ChatItem`s and the
 * stream's ops: the chat view's conversation, and — the same code, nested — a sub-agent's
 * transcript inside its card (`subagent-card.ts`). Messages are keyed by id and updated in
 * place (`chat-message-view.ts`); the live response becomes its message without being
 * rebuilt.
 *
 * `Nesting` is what the nested cards of one chat view share: every sub-agent card drawn,
 * by its path (the `delegate` call ids from the top, joined with "/"), so an op carrying a
 * `path` finds its transcript, and the actions a card offers (its own Stop, fetching a
 * whole text of its transcript).
 */
import { CELL_EDIT_TYPE, parseProposal } from "../cards/cell-edit-card";
import { MessageView } from "./chat-message-view";
import { TranscriptWindow } from "./transcript-window";
import type { MessageActionsOptions } from "./message-actions";
import type { ChatCard, ChatItem, ChatOp, FullTextRequest, LiveSnapshot, SubagentPart } from "./chat-view-traits";
import type { Lang } from "../i18n";

/** A sub-agent's card as the transcript and the message views use it. The cards are made
 * by `cards/subagent-card.ts` (which nests a transcript of its own), and its factory comes
 * in through `Nesting`: so this module and the message view import no card module, and
 * none of the three imports another in a circle. */
export interface NestedCard {
  readonly root: HTMLElement;
  /** The part as drawn now, with the transcript as it stands (for the saved state). */
  part(): SubagentPart | null;
  /** Apply streamed ops of this card's transcript. */
  applyOps(ops: readonly ChatOp[]): void;
  update(patch: {
    status?: ChatCard["status"];
    part?: SubagentPart | null;
    trace?: ChatCard["trace"] | null;
    lang?: Lang;
  }): void;
  destroy(): void;
}

export interface NestedCardOptions {
  lang?: Lang;
  /** The run ids from the top down to this card's run (its `delegate` call id last). */
  path: readonly string[];
  nesting: Nesting;
}

export interface Nesting {
  /** The sub-agent cards drawn, by `pathKey(path)`. */
  readonly cards: Map<string, NestedCard>;
  /** Makes a sub-agent card (`createSubagentCard`). */
  createCard(host: HTMLElement, options: NestedCardOptions): NestedCard;
  /** Stop only this sub-agent (the id of its run: its `delegate` call). */
  stop?: (runId: string) => Promise<unknown>;
  /** The whole of a text of a message (its `path` says in which transcript). */
  fetchWhole?: (request: FullTextRequest) => Promise<string>;
  /** Retry, edit, rewind and fork on the session's own messages (not a sub-agent's). */
  messageActions?: MessageActionsOptions;
}

export function pathKey(path: readonly string[]): string {
  return path.join("/");
}

/** Apply ops that carry a `path` to the sub-agent cards they name; false when one names a
 * card not drawn (the caller resyncs from a snapshot). */
export function applyNestedOps(nesting: Nesting, ops: readonly ChatOp[]): boolean {
  let complete = true;
  for (const op of ops) {
    const card = op.path && op.path.length > 0 ? nesting.cards.get(pathKey(op.path)) : undefined;
    if (card) card.applyOps([op]);
    else complete = false;
  }
  return complete;
}

export interface TranscriptOptions {
  lang: () => Lang;
  agentName: () => string;
  /** Where this transcript is: [] at the top, the run ids down to it when nested. */
  path: readonly string[];
  nesting: Nesting;
  /** The live response started or ended (the chat view redraws its chrome). */
  onLiveChange?: () => void;
  /** The element that scrolls the list: only the messages near its viewport are drawn
   * (./transcript-window.ts). None (a sub-agent's card): every message is drawn. */
  scroller?: HTMLElement | null;
  /** Messages were drawn again or released by scrolling. */
  onDrawn?: () => void;
}

export class Transcript {
  /** Which messages are drawn, and the items of those that are not. */
  readonly window: TranscriptWindow;
  live: MessageView | null = null;
  /** Tells a live response the id of the message it became. */
  private readonly liveIds = new WeakMap<MessageView, (id: string) => void>();

  constructor(
    readonly list: HTMLElement,
    readonly liveHost: HTMLElement,
    private readonly options: TranscriptOptions,
  ) {
    this.window = new TranscriptWindow(list, {
      scroller: options.scroller ?? null,
      create: (entry) => {
        const id = entry.id;
        const view = this.newView(entry.role, entry.pos, () => id, entry.open);
        view.update(entry.item);
        return view;
      },
      changed: () => {
        this.mergeThinking();
        options.onDrawn?.();
      },
    });
  }

  get hasContent(): boolean {
    return this.window.size > 0 || this.live !== null;
  }

  private fetcher(messageId: () => string) {
    const fetchWhole = this.options.nesting.fetchWhole;
    if (!fetchWhole) return null;
    const path = this.options.path;
    return (request: Omit<FullTextRequest, "message_id">) =>
      fetchWhole(path.length ? { ...request, message_id: messageId(), path: [...path] } : { ...request, message_id: messageId() });
  }

  private newView(role: ChatItem["role"], pos: number, messageId: () => string, open?: Set<string>): MessageView {
    const { lang, agentName, path, nesting } = this.options;
    const view = new MessageView(role, pos, lang, agentName, this.fetcher(messageId), { path, nesting }, open);
    if (path.length === 0 && nesting.messageActions) view.addActions(nesting.messageActions);
    return view;
  }

  upsert(item: ChatItem): void {
    this.window.upsert(item);
  }

  startLive(id: string): MessageView {
    if (this.live) this.endLive(null);
    // Filed under its message's id when it ends; fetches go by the id it has then.
    let messageId = id;
    const live = this.newView("assistant", Number.MAX_SAFE_INTEGER, () => messageId);
    this.liveIds.set(live, (next) => {
      messageId = next;
    });
    this.live = live;
    live.root.dataset.id = id;
    live.root.classList.add("neta-is-live");
    this.liveHost.append(live.root);
    this.options.onLiveChange?.();
    return live;
  }

  endLive(id: string | null): void {
    const view = this.live;
    this.live = null;
    if (!view) return;
    view.root.classList.remove("neta-is-live");
    const drawn = id === null ? undefined : this.window.get(id);
    if (id === null || (drawn && !view.holdsAllOf(drawn.item))) {
      view.destroy();
    } else {
      // The streamed response is now this message: same DOM, filed into the list. It
      // holds the message's whole text: a view drawn for it from a preview gives way.
      // (Its item usually comes just after the end: till then it is filed last, with
      // what it streamed.)
      this.liveIds.get(view)?.(id);
      if (drawn) this.window.adopt(view, drawn.item, true);
      else {
        const { text, thinking } = view.liveSnapshot();
        this.window.adopt(view, { id, role: "assistant", index: Number.MAX_SAFE_INTEGER, pos: Number.MAX_SAFE_INTEGER, text, thinking }, false);
      }
    }
    this.options.onLiveChange?.();
  }

  /**
   * A snapshot is about to replace the live response (`showLive`) by `live`, with the
   * messages `items`. When the response this view streamed is not the snapshot's live one,
   * it has become a message meanwhile: its `end` was in a batch this view never applied
   * (a gap, then a resync). The snapshot draws that message from its preview; the
   * response holds all of it, so it is filed under it instead, whole, and the item updates
   * it in place — what streamed here stays whole after the turn, as after an `end`.
   */
  settleLive(items: readonly ChatItem[], live: LiveSnapshot | null): void {
    const view = this.live;
    if (!view || (live !== null && live.id === view.root.dataset.id)) return;
    for (let i = items.length - 1; i >= 0; i -= 1) {
      const item = items[i] as ChatItem;
      if (view.holdsAllOf(item)) {
        this.endLive(item.id);
        return;
      }
    }
  }

  /** Replace the live response by the one a snapshot carries (or none). */
  showLive(snapshot: LiveSnapshot | null): void {
    if (this.live) {
      this.live.destroy();
      this.live = null;
    }
    if (!snapshot) {
      this.options.onLiveChange?.();
      return;
    }
    const view = this.startLive(snapshot.id);
    if (snapshot.thinking) {
      view.appendThinking(snapshot.thinking);
      if (!snapshot.thinking_open) view.thinkingDone();
    }
    if (snapshot.text) view.appendText(snapshot.text);
  }

  /** Apply one streamed op of this transcript. */
  apply(op: ChatOp): void {
    switch (op.op) {
      case "live":
        this.startLive(op.id);
        break;
      case "thinking":
        (this.live ?? this.startLive("live")).appendThinking(op.text);
        break;
      case "thinking_done":
        this.live?.thinkingDone();
        break;
      case "text":
        (this.live ?? this.startLive("live")).appendText(op.text);
        break;
      case "end":
        this.endLive(op.id);
        break;
      case "item":
        this.upsert(op.item);
        break;
    }
  }

  /** Remove the messages that are not among `items`. */
  pruneTo(items: readonly ChatItem[]): void {
    this.window.pruneTo(new Set(items.map((item) => item.id)));
  }

  clear(): void {
    this.window.clear();
    this.live?.destroy();
    this.live = null;
  }

  destroy(): void {
    this.window.destroy();
    this.live?.destroy();
    this.live = null;
  }

  setLang(lang: Lang): void {
    for (const view of this.window.drawn()) view.setLang(lang);
    this.live?.setLang(lang);
  }

  /** The index of the oldest message held, or null. */
  firstIndex(): number | null {
    return this.window.firstIndex();
  }

  /** The complete items with these ids as drawn (or kept) now, or null when one is unknown. */
  items(ids: readonly string[]): ChatItem[] | null {
    const found: ChatItem[] = [];
    for (const id of ids) {
      const entry = this.window.get(id);
      const item = entry ? (entry.view?.currentItem() ?? entry.item) : null;
      if (!item) return null;
      found.push(item);
    }
    return found;
  }

  /** Every message, in order, as complete items. */
  allItems(): ChatItem[] {
    return this.window.allItems();
  }

  /** The agent's accepted cell changes (its cell-edit cards) in the messages after `id`: a
   * drawn message counts the cards it shows (one undone on the page no longer counts), a
   * message not drawn the accepted changes its item holds. */
  acceptedChangesAfter(id: string): number {
    let count = 0;
    for (const entry of this.window.after(id)) {
      count += entry.view
        ? entry.view.root.querySelectorAll('.neta-cell-edit[data-decision="accepted"]').length
        : acceptedChanges(entry.item.cards ?? []);
    }
    return count;
  }

  /** The live response as a snapshot (what a saved state keeps of it). */
  liveSnapshot(): LiveSnapshot | null {
    const live = this.live;
    return live ? live.liveSnapshot() : null;
  }

  /**
   * Consecutive thinking-only responses of one turn (a model that thinks, calls an
   * internal tool such as `todo`, and thinks again) show as one thinking block: the
   * thinking of each such message moves into the next message's block, which still
   * streams and folds, and the emptied messages are hidden. A user message or a marker
   * ends the run. Runs once per batch of changes, not per delta, over the messages drawn.
   */
  mergeThinking(): void {
    const ordered: MessageView[] = Array.from(this.window.drawn());
    if (this.live) ordered.push(this.live);
    let run: MessageView[] = []; // thinking-only messages waiting for the next block
    const flush = (into: MessageView | null) => {
      // `into` shows the run's thinking; without one, the run's last message does.
      const shown = into ?? run[run.length - 1] ?? null;
      const hidden = into ? run : run.slice(0, -1);
      for (const view of hidden) view.setMerged(true);
      if (shown) {
        shown.setMerged(false);
        const earlier = into ? run : run.slice(0, -1);
        shown.setThinkingPrefix(earlier.map((view) => view.thinkingText).join("\n\n"));
      }
      run = [];
    };
    for (const view of ordered) {
      if (view.role !== "assistant") {
        flush(null);
        view.setMerged(false);
        continue;
      }
      if (view.thinkingOnly) {
        view.setThinkingPrefix("");
        run.push(view);
        continue;
      }
      if (run.length > 0 && view.thinkingText) {
        flush(view);
      } else {
        flush(null);
        view.setMerged(false);
        view.setThinkingPrefix("");
      }
    }
    flush(null);
  }
}

/** The accepted cell changes among `cards`' outputs, a sub-agent's messages included. */
function acceptedChanges(cards: readonly ChatCard[]): number {
  let count = 0;
  for (const card of cards) {
    for (const output of card.outputs ?? []) {
      if (output.media_type === CELL_EDIT_TYPE && parseProposal(output.text ?? "")?.decision === "accepted") count += 1;
    }
    for (const message of card.subagent?.messages ?? []) count += acceptedChanges(message.cards ?? []);
  }
  return count;
}
