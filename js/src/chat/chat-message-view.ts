/**
 * One message of the chat view, or the response being streamed: a user bubble, a
 * compaction marker, or an assistant message with its thinking block, streaming text, tool
 * and skill cards and status. It is updated in place from `ChatItem`s, so the streaming
 * response becomes its final message without being rebuilt and a skill card stays one DOM
 * node from running to done.
 *
 * Long texts arrive as previews (`text_chars`, `result_chars`… the whole one's length): a
 * note says so and fetches the whole through `fetchWhole`, into the DOM only — `item`, which
 * the chat view turns into the saved `messages` trait, keeps the preview. A response this
 * view streamed itself is whole in the DOM already and stays so.
 */
import { attachmentChip } from "./attachments";
import { addMessageActions, type MessageActionsOptions } from "./message-actions";
import type { NestedCard, Nesting } from "./chat-transcript";
import type { ChatCard, ChatItem, FullTextRequest, LiveSnapshot } from "./chat-view-traits";
import { characterCount, createCutNote, type CutNote, type FetchWhole } from "../cut-text";
import { element } from "../dom";
import { t, type Lang } from "../i18n";
import { createSkillCard, type SkillCardState } from "../cards/skill-card";
import { StreamingMarkdown } from "../streaming-markdown";
import { createThinkingBlock, type ThinkingBlock } from "../cards/thinking-block";
import { formatTokens } from "../cards/token-stats";
import { createToolCard, type ToolCardState } from "../cards/tool-card";
import type { Component } from "../types";

const CHAT_TEXT_CLASSES = {
  root: "neta-chat-text neta-markdown",
  stable: "neta-chat-text-stable",
  tail: "neta-chat-text-tail",
  cursor: "neta-chat-cursor",
};

interface CardView {
  kind: ChatCard["kind"];
  host: HTMLDivElement;
  component: Component<ToolCardState> | Component<SkillCardState> | NestedCard;
  signature: string;
}

/** Where a message view is: the transcript's path (see chat-transcript.ts) and what the
 * nested cards of its chat view share. */
export interface MessagePlace {
  path: readonly string[];
  nesting: Nesting;
}

/** Fetches the whole of a field of this view's message (or of one of its cards). */
export type FetchMessageText = (request: Omit<FullTextRequest, "message_id">) => Promise<string>;

/**
 * How long the previews of a message's text and thinking are (Python: `TEXT_CHARS`,
 * `THINKING_CHARS` in neta_nb/widgets/state_bounds.py). The kernel does not send again a
 * text this view streamed (`null`, "keep yours", with `*_chars` its whole length when that
 * is over the bound); the item keeps a preview of it, as one from the kernel would be.
 */
const PREVIEW_CHARS = { text: 20_000, thinking: 8_000 } as const;

/** Whether the view holds the whole of a text whose preview is `preview`: it streamed it. */
function holdsWhole(held: string, preview: string): boolean {
  return held.length > preview.length && held.startsWith(preview);
}

/** Whether `held` is all of the text an item carries as `text` (a preview of one `total`
 * long when `total` is set). */
function holdsAll(held: string, text: string, total: number | undefined): boolean {
  return total ? holdsWhole(held, text) && characterCount(held) === total : held === text;
}

/** One message (or the live response) in the list. */
export class MessageView {
  readonly root: HTMLDivElement;
  pos: number;
  signature = "";
  /** The item as drawn, with streamed text filled in where the update said "keep". */
  item: ChatItem | null = null;
  private readonly lang: () => Lang;
  private thinking: ThinkingBlock | null = null;
  private thinkingHost: HTMLDivElement | null = null;
  private thinkingStreaming = false;
  /** This message's own thinking (the block may show earlier thinking before it). */
  private ownThinking = "";
  /** Thinking of the thinking-only messages just before this one, shown in its block. */
  private thinkingPrefix = "";
  private text: StreamingMarkdown | null = null;
  private cardsHost: HTMLDivElement | null = null;
  private readonly cards = new Map<string, CardView>();
  private status: HTMLDivElement | null = null;
  private userText: HTMLDivElement | null = null;
  private userFiles: HTMLDivElement | null = null;
  private actions: { setLang(): void } | null = null;
  readonly role: ChatItem["role"];
  private readonly textNote: CutNote;
  private readonly thinkingNote: CutNote;
  /** Whole texts fetched (or streamed) for the current previews, by field. */
  private whole: { text: string | null; thinking: string | null } = { text: null, thinking: null };

  constructor(
    role: ChatItem["role"],
    pos: number,
    lang: () => Lang,
    private readonly agentName: () => string,
    private readonly fetchWhole: FetchMessageText | null = null,
    private readonly place: MessagePlace,
    /** The cards (by id) and thinking block ("thinking") the reader opened: kept by the
     * transcript's window (./transcript-window.ts), so a message drawn again opens them. */
    private readonly open: Set<string> = new Set(),
  ) {
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
      this.userFiles = element("div", "neta-chat-attachments");
      this.userFiles.hidden = true;
      this.root.append(this.userText, this.userFiles);
      // A cut note is made only for a field that was cut, under what it notes.
      this.textNote = createCutNote(lang, (text) => this.showWhole("text", text), this.userFiles);
      this.thinkingNote = createCutNote(lang, (text) => this.showWhole("thinking", text), this.userFiles);
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
      this.textNote = createCutNote(lang, (text) => this.showWhole("text", text), this.text.root);
      this.thinkingNote = createCutNote(lang, (text) => this.showWhole("thinking", text), this.thinkingHost);
    } else {
      this.textNote = createCutNote(lang, () => undefined, this.root);
      this.thinkingNote = createCutNote(lang, () => undefined, this.root);
    }
  }

  /** The item as drawn now, with the transcripts of its sub-agent cards as they stand
   * (they stream on their own, after the item arrived). */
  currentItem(): ChatItem | null {
    const item = this.item;
    if (!item?.cards?.some((card) => card.kind === "subagent")) return item;
    const cards = item.cards.map((card) => {
      const view = this.cards.get(card.id);
      return card.kind === "subagent" && view?.kind === "subagent"
        ? { ...card, subagent: (view.component as NestedCard).part() ?? card.subagent }
        : card;
    });
    return { ...item, cards };
  }

  /** The streamed response as a snapshot. */
  liveSnapshot(): LiveSnapshot {
    return {
      id: this.root.dataset.id ?? "",
      thinking: this.ownThinking,
      text: this.text?.value ?? "",
      thinking_open: this.thinkingStreaming,
    };
  }

  /**
   * Whether this response holds all of the message `item` draws — its whole text, or for
   * a message without text its whole thinking: it streamed that message here. (The
   * transcript files a live response under its message by this when the `end` that names
   * the message never reached this view, see `Transcript.settleLive`.)
   */
  holdsAllOf(item: ChatItem): boolean {
    if (this.role !== "assistant" || item.role !== "assistant" || item.text == null) return false;
    const text = this.text?.value ?? "";
    if (text || item.text) return holdsAll(text, item.text, item.text_chars);
    return this.ownThinking !== "" && holdsAll(this.ownThinking, item.thinking ?? "", item.thinking_chars);
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
    this.ownThinking += delta;
    block.append(delta);
  }

  // --- merged thinking (see mergeThinking in chat-view.ts) ---------------------------------
  /** The message's own thinking, whatever its block shows. */
  get thinkingText(): string {
    return this.ownThinking;
  }

  /** It shows only thinking: no text, no cards, no stop or error note. */
  get thinkingOnly(): boolean {
    const item = this.item;
    const text = this.text?.value ?? item?.text ?? "";
    return (
      this.role === "assistant" &&
      this.ownThinking.length > 0 &&
      !text &&
      this.cards.size === 0 &&
      !item?.interrupted &&
      !item?.error
    );
  }

  /** Show `prefix` (earlier thinking of the same turn) before this message's thinking. */
  setThinkingPrefix(prefix: string): void {
    if (prefix === this.thinkingPrefix) return;
    this.thinkingPrefix = prefix;
    if (this.thinking || prefix) this.showThinking();
  }

  /** Hide the message: its thinking shows in the block of a later message. */
  setMerged(merged: boolean): void {
    this.root.classList.toggle("neta-is-merged", merged);
  }

  private showThinking(): void {
    const text = [this.thinkingPrefix, this.ownThinking].filter(Boolean).join("\n\n");
    if (!text && !this.thinking) return;
    this.ensureThinking().update({ text, streaming: this.thinkingStreaming, lang: this.lang() });
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
      this.thinking = createThinkingBlock(this.thinkingHost, {
        lang: this.lang(),
        onUserChange: (patch) => {
          if (patch.collapsed !== undefined) remember(this.open, "thinking", !patch.collapsed);
        },
      });
      if (this.open.has("thinking")) this.thinking.update({ collapsed: false });
    }
    return this.thinking as ThinkingBlock;
  }

  // --- whole state ----------------------------------------------------------------------
  update(update: ChatItem): void {
    const item: ChatItem = { ...update };
    if (item.role === "assistant") {
      if (item.text === null) item.text = this.keepHeld("text", this.text?.value ?? "", item.text_chars);
      if (item.thinking === null) item.thinking = this.keepHeld("thinking", this.ownThinking, item.thinking_chars);
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
      if (!item.text_chars) this.whole.text = null;
      this.userText.textContent = this.whole.text ?? item.text ?? "";
      this.setNote(this.textNote, "text", item.text ?? "", item.text_chars);
      if (this.userFiles) {
        const files = item.attachments ?? [];
        this.userFiles.hidden = files.length === 0;
        this.userFiles.replaceChildren(...files.map((file) => attachmentChip(file, lang)));
      }
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
    if (item.thinking_chars && this.whole.thinking === null && holdsWhole(this.ownThinking, thinking)) {
      this.whole.thinking = this.ownThinking || null; // streamed here: whole already
    } else if (!item.thinking_chars) this.whole.thinking = null;
    if (thinking) {
      this.ownThinking = this.whole.thinking ?? thinking;
      this.thinkingStreaming = false;
      this.showThinking();
    }
    this.setNote(this.thinkingNote, "thinking", thinking, item.thinking_chars);
    const text = item.text ?? "";
    if (item.text_chars && this.whole.text === null && holdsWhole(this.text?.value ?? "", text)) {
      this.whole.text = this.text?.value ?? null;
    } else if (!item.text_chars) this.whole.text = null;
    this.text?.finish(this.whole.text ?? text);
    this.setNote(this.textNote, "text", text, item.text_chars);
    this.updateCards(item.cards ?? [], lang);
    this.updateStatus(item, lang);
  }

  /** The item's text for a field the kernel left to this view (`null`): what it holds, or
   * the preview of it when the whole is over the preview bound (then held whole here). */
  private keepHeld(field: "text" | "thinking", held: string, total: number | undefined): string {
    if (!total || held.length < total) return held;
    // Python counts code points, JS strings UTF-16 units: compare and cut by code points.
    const characters = Array.from(held);
    if (characters.length !== total) return held;
    this.whole[field] = held;
    return characters.slice(0, PREVIEW_CHARS[field]).join("");
  }

  private fetcher(request: Omit<FullTextRequest, "message_id">): FetchWhole | null {
    const fetchWhole = this.fetchWhole;
    return fetchWhole ? () => fetchWhole(request) : null;
  }

  private setNote(note: CutNote, field: "text" | "thinking", preview: string, total: number | undefined): void {
    const cut = total && this.whole[field] === null ? { shown: characterCount(preview), total } : null;
    note.set(cut, this.fetcher({ field }));
  }

  private showWhole(field: "text" | "thinking", text: string): void {
    this.whole[field] = text;
    if (field === "thinking") {
      this.ownThinking = text;
      this.showThinking(); // with any earlier thinking of the turn merged before it
    } else if (this.userText) this.userText.textContent = text;
    else this.text?.finish(text);
  }

  /** The retry / edit / rewind / fork bar (./message-actions.ts); prompts and answers. */
  addActions(options: MessageActionsOptions): void {
    if (this.role !== "user" && this.role !== "assistant") return;
    this.actions = addMessageActions(this.root, this.role, () => this.item?.id ?? "",
      () => this.item?.text ?? "", this.userText, options);
  }

  setLang(lang: Lang): void {
    this.actions?.setLang();
    this.textNote.setLang();
    this.thinkingNote.setLang();
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
        const cardId = card.id;
        const onUserChange = (patch: { expanded?: boolean }) => {
          if (patch.expanded !== undefined) remember(this.open, cardId, patch.expanded);
        };
        const component =
          card.kind === "subagent"
            ? this.place.nesting.createCard(cardHost, {
                lang,
                path: [...this.place.path, cardId],
                nesting: this.place.nesting,
              })
            : card.kind === "skill"
              ? createSkillCard(cardHost, { lang, onUserChange, fetchWhole: this.fetcher({ card_id: cardId, field: "result" }) ?? undefined })
              : createToolCard(cardHost, {
                  lang,
                  onUserChange,
                  fetchWhole: this.fetchWhole ? (field) => (this.fetcher({ card_id: cardId, field }) as FetchWhole)() : undefined,
                });
        if (card.kind !== "subagent" && this.open.has(cardId)) (component as Component<ToolCardState>).update({ expanded: true });
        view = { kind: card.kind, host: cardHost, component, signature: "" };
        this.cards.set(card.id, view);
      }
      // The chat view hides a call waiting for approval here: its approval card shows it.
      view.host.dataset.callId = card.id;
      view.host.dataset.status = card.status;
      const signature = JSON.stringify(card);
      if (signature !== view.signature) {
        view.signature = signature;
        if (card.kind === "subagent") {
          (view.component as NestedCard).update({ status: card.status, part: card.subagent ?? null, trace: card.trace ?? null, lang });
        } else if (card.kind === "skill") {
          (view.component as Component<SkillCardState>).update({
            name: card.name,
            label: card.label,
            status: card.status,
            percent: card.percent ?? 0,
            step: card.step ?? null,
            detail: card.detail ?? null,
            result: card.result,
            result_chars: card.result_chars ?? 0,
            trace: card.trace ?? null,
            lang,
          });
        } else {
          (view.component as Component<ToolCardState>).update({
            name: card.name,
            label: card.label,
            status: card.status,
            args: card.args ?? {},
            args_chars: card.args_chars ?? 0,
            result: card.result,
            result_chars: card.result_chars ?? 0,
            outputs: card.outputs ?? [],
            trace: card.trace ?? null,
            locations: card.locations ?? [],
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
    if (item.interrupted === "interrupted") children.push(element("span", "neta-tag neta-chat-stopped", t(lang, "interrupted")));
    if (item.error) {
      const box = element("div", "neta-chat-error");
      box.append(element("span", "neta-chat-error-title", t(lang, "error")), element("span", "neta-chat-error-text", item.error));
      children.push(box);
    }
    status.replaceChildren(...children);
    status.hidden = children.length === 0;
  }

  destroy(): void {
    this.textNote.destroy();
    this.thinkingNote.destroy();
    this.thinking?.destroy();
    this.text?.destroy();
    for (const card of this.cards.values()) card.component.destroy();
    this.root.remove();
  }
}

function remember(open: Set<string>, key: string, isOpen: boolean): void {
  if (isOpen) open.add(key);
  else open.delete(key);
}
