/**
 * Which messages of a long transcript are drawn: the one owner of that state.
 *
 * A chat of hundreds of turns holds thousands of items; older pages keep arriving as the
 * reader scrolls back. Only the items near the viewport are drawn (`MessageView`s in the
 * list); the others are *released* — their view destroyed, their item (as last drawn: the
 * model of what they show) and their height kept — and stand as two spacers, one above and
 * one below the drawn run, as tall as the items they stand for. Scrolling draws the items
 * coming near the viewport again from their items and releases those far from it, in both
 * directions, so the DOM stays bounded wherever the reader is.
 *
 * - Heights: an item drawn once is measured and keeps its height while released; one never
 *   drawn counts the average of its role's measured items (a guess until drawn). Drawing
 *   above the viewport corrects the guesses without moving what the reader sees: every
 *   change is made around an anchor (the first item on screen), whose place on screen is
 *   restored after it (`keepPlace`).
 * - Cost: each pass reads and changes only the drawn run and the entries it takes in or
 *   lets go; older pages are filed into the spacer above. Nothing walks the whole list,
 *   except a jump (the scrollbar dragged far into a spacer), once.
 * - What lives only in the DOM is kept or not released: the items that hold the page's
 *   selection or focus stay drawn; the cards and thinking blocks the reader opened are
 *   remembered by id in the entry (`open`) and open again when drawn.
 * - No scroller (a sub-agent's transcript in its card) or one not laid out: every item is
 *   drawn, as before.
 */
import type { MessageView } from "./chat-message-view";
import type { ChatItem } from "./chat-view-traits";
import { characterCount } from "../cut-text";
import { element } from "../dom";

export interface WindowEntry {
  readonly id: string;
  pos: number;
  readonly role: ChatItem["role"];
  /** The item as last given or drawn (streamed text filled in): what draws it again. */
  item: ChatItem;
  view: MessageView | null;
  /** Its height (px, its margin included) when last drawn; null: never drawn. */
  height: number | null;
  /** The cards (by id) and the thinking block ("thinking") the reader opened. */
  readonly open: Set<string>;
}

export interface WindowOptions {
  /** The element that scrolls the list; null: every item is drawn. */
  scroller: HTMLElement | null;
  /** A view for `entry`, showing `entry.item` (not yet in the list). */
  create(entry: WindowEntry): MessageView;
  /** Views were drawn or released (the chat view merges thinking, hides asked cards). */
  changed?(): void;
}

/** Drawn: items within this many viewport heights of it (at least `MIN_MARGIN` px). */
const DRAW_MARGIN = 1;
/** Released: items farther than this many viewport heights from it. */
const RELEASE_MARGIN = 2.5;
const MIN_MARGIN = 600;
/** A first guess per role, before any item of that role was measured. */
const FIRST_GUESS: Record<ChatItem["role"], number> = { user: 70, assistant: 260, compaction: 40 };
/** At most this many rounds of drawing per pass (each corrects the guesses of the last). */
const ROUNDS = 4;

export class TranscriptWindow {
  private readonly entries: WindowEntry[] = [];
  private readonly byId = new Map<string, WindowEntry>();
  /** The drawn run: entries[lo, hi). */
  private lo = 0;
  private hi = 0;
  private readonly topSpacer: HTMLDivElement;
  private readonly bottomSpacer: HTMLDivElement;
  private topHeight = 0;
  private bottomHeight = 0;
  private readonly measured = new Map<ChatItem["role"], { sum: number; count: number }>();
  private frame = 0;
  private readonly onScroll = () => this.schedule();
  /** A scroller laid out late (a hidden tab shown) or resized gets a pass. */
  private readonly resized: ResizeObserver | null;

  constructor(
    readonly list: HTMLElement,
    private readonly options: WindowOptions,
  ) {
    this.topSpacer = element("div", "neta-chat-window-spacer");
    this.bottomSpacer = element("div", "neta-chat-window-spacer");
    for (const spacer of [this.topSpacer, this.bottomSpacer]) spacer.setAttribute("aria-hidden", "true");
    list.append(this.topSpacer, this.bottomSpacer);
    this.setSpacers();
    options.scroller?.addEventListener("scroll", this.onScroll, { passive: true });
    this.resized = options.scroller && typeof ResizeObserver === "function" ? new ResizeObserver(this.onScroll) : null;
    if (options.scroller) this.resized?.observe(options.scroller);
  }

  get size(): number {
    return this.entries.length;
  }

  /** How many items are drawn now. */
  get drawnCount(): number {
    return this.hi - this.lo;
  }

  get(id: string): WindowEntry | undefined {
    return this.byId.get(id);
  }

  /** The drawn views, in order. */
  *drawn(): Generator<MessageView> {
    for (let i = this.lo; i < this.hi; i += 1) {
      const view = this.entries[i]?.view;
      if (view) yield view;
    }
  }

  /** The entries after the one of `id` (none when it is unknown), in order, drawn or not. */
  *after(id: string): Generator<WindowEntry> {
    const entry = this.byId.get(id);
    const at = entry ? this.entries.indexOf(entry) : -1;
    if (at < 0) return;
    for (let i = at + 1; i < this.entries.length; i += 1) yield this.entries[i] as WindowEntry;
  }

  /** The oldest item's index (what the next older page is asked before), or null. */
  firstIndex(): number | null {
    const first = this.entries[0];
    return first ? first.item.index : null;
  }

  /** Every item, in order, as drawn or as kept. */
  allItems(): ChatItem[] {
    return this.entries.map((entry) => entry.view?.currentItem() ?? entry.item);
  }

  // --- the model ------------------------------------------------------------------------
  /** Add or update the item; a new one is drawn when it falls inside the drawn run or
   * after its end (the newest, while the run reaches it), else it waits released. */
  upsert(item: ChatItem): void {
    const entry = this.byId.get(item.id);
    if (entry && entry.pos === item.pos) {
      if (entry.view) {
        entry.view.update(item);
        entry.item = entry.view.item ?? item;
      } else entry.item = keep(entry.item, item);
      return;
    }
    let view: MessageView | null = null;
    let kept: ChatItem = item;
    if (entry) {
      // Moved (the live response's item came after its end): filed again at its place;
      // a drawn view takes the item itself (it holds what it streamed).
      view = this.take(entry);
      if (view) {
        view.update(item);
        kept = view.item ?? item;
      } else kept = keep(entry.item, item);
    }
    this.insert(item.id, item.role, kept, view, entry?.open);
  }

  /** File a view drawn elsewhere (the live response, ended) as `item`'s; `update`: it
   * shows `item` (else `item` only stands for what it streamed until its item comes). */
  adopt(view: MessageView, item: ChatItem, update: boolean): void {
    const entry = this.byId.get(item.id);
    const open = entry?.open;
    if (entry) this.take(entry)?.destroy();
    if (update) view.update(item);
    this.insert(item.id, item.role, view.item ?? item, view, open);
  }

  /** Remove the items not among `ids`. */
  pruneTo(ids: ReadonlySet<string>): void {
    for (const entry of Array.from(this.entries)) {
      if (!ids.has(entry.id)) this.take(entry)?.destroy();
    }
  }

  clear(): void {
    for (let i = this.lo; i < this.hi; i += 1) this.entries[i]?.view?.destroy();
    this.entries.length = 0;
    this.byId.clear();
    this.lo = this.hi = 0;
    this.topHeight = this.bottomHeight = 0;
    this.setSpacers();
  }

  destroy(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.options.scroller?.removeEventListener("scroll", this.onScroll);
    this.resized?.disconnect();
    this.clear();
    this.topSpacer.remove();
    this.bottomSpacer.remove();
  }

  /** Take the entry out of the list; its view (if drawn) is returned, out of the DOM. */
  private take(entry: WindowEntry): MessageView | null {
    const at = this.entries.indexOf(entry);
    if (at < 0) return null;
    this.entries.splice(at, 1);
    this.byId.delete(entry.id);
    const view = entry.view;
    if (at < this.lo) {
      this.lo -= 1;
      this.hi -= 1;
      this.topHeight -= this.heightOf(entry);
    } else if (at < this.hi) {
      this.hi -= 1;
    } else this.bottomHeight -= this.heightOf(entry);
    view?.root.remove();
    entry.view = null;
    this.setSpacers();
    return view;
  }

  private insert(id: string, role: ChatItem["role"], item: ChatItem, view: MessageView | null, open?: Set<string>): void {
    const entry: WindowEntry = { id, pos: item.pos, role, item, view: null, height: null, open: open ?? new Set() };
    const at = this.indexFor(item.pos);
    this.entries.splice(at, 0, entry);
    this.byId.set(id, entry);
    const n = this.entries.length;
    // Drawn: everything without a scroller; else inside the run, at its end when it
    // reaches the newest, or the very first.
    const drawnRun = this.hi > this.lo;
    const draw = !this.options.scroller
      ? true
      : !drawnRun
        ? this.lo === at && this.hi === at && (n === 1 || at === n - 1)
        : at > this.lo && at <= this.hi && (at < this.hi || this.hi === n - 1);
    if (!draw && (at < this.lo || (at === this.lo && drawnRun))) {
      this.lo += 1;
      this.hi += 1;
      this.release(entry, view);
      this.topHeight += this.heightOf(entry);
    } else if (draw) {
      this.hi += 1;
      this.place(at, view ?? this.options.create(entry));
    } else {
      this.release(entry, view);
      this.bottomHeight += this.heightOf(entry);
    }
    this.setSpacers();
    this.schedule();
  }

  /** The index at which an item at `pos` is filed (after those at the same pos). */
  private indexFor(pos: number): number {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((this.entries[mid] as WindowEntry).pos <= pos) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Put `view` into the list as entry `at`'s (inside the drawn run). */
  private place(at: number, view: MessageView): void {
    const entry = this.entries[at] as WindowEntry;
    entry.view = view;
    const next = this.entries[at + 1];
    const before = at + 1 < this.hi && next?.view ? next.view.root : this.bottomSpacer;
    this.list.insertBefore(view.root, before);
  }

  private release(entry: WindowEntry, view: MessageView | null): void {
    if (!view) return;
    entry.item = view.currentItem() ?? (view.item === null ? { ...entry.item, ...liveText(view) } : entry.item);
    view.destroy();
    entry.view = null;
  }

  // --- heights --------------------------------------------------------------------------
  private heightOf(entry: WindowEntry): number {
    if (entry.height !== null) return entry.height;
    const seen = this.measured.get(entry.role);
    return seen && seen.count > 0 ? seen.sum / seen.count : FIRST_GUESS[entry.role];
  }

  private setHeight(entry: WindowEntry, height: number): void {
    const seen = this.measured.get(entry.role) ?? { sum: 0, count: 0 };
    if (entry.height !== null) {
      seen.sum -= entry.height;
      seen.count -= 1;
    }
    seen.sum += height;
    seen.count += 1;
    this.measured.set(entry.role, seen);
    entry.height = height;
  }

  private setSpacers(): void {
    this.topHeight = Math.max(0, this.topHeight);
    this.bottomHeight = Math.max(0, this.bottomHeight);
    this.topSpacer.style.height = `${Math.round(this.topHeight)}px`;
    this.bottomSpacer.style.height = `${Math.round(this.bottomHeight)}px`;
    this.topSpacer.hidden = this.topHeight === 0;
    this.bottomSpacer.hidden = this.bottomHeight === 0;
  }

  /** Measure the drawn entries from `from` to `to` (their tops, up to the next's). */
  private measure(from: number, to: number): void {
    const tops: number[] = [];
    for (let i = from; i < to; i += 1) tops.push(this.entries[i]?.view?.root.getBoundingClientRect().top ?? 0);
    const next = to < this.hi ? this.entries[to]?.view?.root : null;
    const end = next ? next.getBoundingClientRect().top : this.endOfRun();
    for (let i = from; i < to; i += 1) {
      const height = (i + 1 < to ? (tops[i + 1 - from] as number) : end) - (tops[i - from] as number);
      this.setHeight(this.entries[i] as WindowEntry, Math.max(0, height));
    }
  }

  /** Where the drawn run ends: the bottom spacer's top (the last item's margin included). */
  private endOfRun(): number {
    const spacer = this.bottomSpacer;
    if (!spacer.hidden) return spacer.getBoundingClientRect().top;
    const last = this.entries[this.hi - 1]?.view?.root;
    if (!last) return 0;
    const margin = Number.parseFloat(getComputedStyle(last).marginBottom) || 0;
    return last.getBoundingClientRect().bottom + margin;
  }

  // --- the pass -------------------------------------------------------------------------
  private noLayout(): boolean {
    const scroller = this.options.scroller;
    return !scroller?.isConnected || scroller.clientHeight === 0;
  }

  /** Run a pass at the next frame (after a scroll, or items came). */
  schedule(): void {
    if (this.frame || !this.options.scroller) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.settle();
    });
  }

  /**
   * Change the list with `change` while what the reader sees stays where it is on screen:
   * the first drawn item on screen (or the top spacer's end) is the anchor.
   */
  keepPlace(change: () => void): void {
    const scroller = this.options.scroller;
    if (!scroller || this.noLayout()) {
      change();
      return;
    }
    const view = scroller.getBoundingClientRect();
    let anchor: Element | null = null;
    for (let i = this.lo; i < this.hi; i += 1) {
      const root = this.entries[i]?.view?.root;
      if (root && root.getBoundingClientRect().bottom > view.top) {
        anchor = root;
        break;
      }
    }
    const anchorTop = anchor?.getBoundingClientRect().top ?? 0;
    change();
    if (anchor?.isConnected) {
      const moved = anchor.getBoundingClientRect().top - anchorTop;
      if (Math.abs(moved) >= 0.5) scroller.scrollTop += moved;
    }
  }

  /** Draw the items near the viewport, release those far from it. */
  settle(): void {
    const scroller = this.options.scroller;
    if (!scroller || this.noLayout()) return;
    let changed = false;
    this.keepPlace(() => {
      const box = scroller.getBoundingClientRect();
      const margin = Math.max(MIN_MARGIN, box.height * DRAW_MARGIN);
      const far = Math.max(MIN_MARGIN * 2, box.height * RELEASE_MARGIN);
      if (this.jumped(box, far)) changed = true;
      for (let round = 0; round < ROUNDS; round += 1) {
        const grew = this.drawAbove(box.top - margin) + this.drawBelow(box.bottom + margin);
        if (grew === 0) break;
        changed = true;
      }
      if (this.releaseFar(box.top - far, box.bottom + far)) changed = true;
      // Merged thinking and asked cards of what was drawn: their heights settle before
      // the reader's place is put back.
      if (changed) this.options.changed?.();
    });
  }

  /** The viewport lies wholly in a spacer (the scrollbar dragged far): draw again there. */
  private jumped(box: DOMRect, far: number): boolean {
    if (this.hi === this.lo) return false;
    const first = this.entries[this.lo]?.view?.root.getBoundingClientRect();
    const lastRoot = this.entries[this.hi - 1]?.view?.root;
    const last = lastRoot?.getBoundingClientRect();
    if (!first || !last) return false;
    const above = last.bottom < box.top - far;
    const below = first.top > box.bottom + far;
    if (!above && !below) return false;
    // The item at the viewport's top, by the heights kept (one walk, for a jump only).
    const listTop = this.topSpacer.hidden ? first.top : this.topSpacer.getBoundingClientRect().top;
    let y = listTop;
    let at = 0;
    while (at < this.entries.length - 1 && y + this.heightOf(this.entries[at] as WindowEntry) < box.top) {
      y += this.heightOf(this.entries[at] as WindowEntry);
      at += 1;
    }
    for (let i = this.lo; i < this.hi; i += 1) this.release(this.entries[i] as WindowEntry, this.entries[i]?.view ?? null);
    let top = 0;
    for (let i = 0; i < at; i += 1) top += this.heightOf(this.entries[i] as WindowEntry);
    let bottom = 0;
    for (let i = at + 1; i < this.entries.length; i += 1) bottom += this.heightOf(this.entries[i] as WindowEntry);
    this.lo = at;
    this.hi = at + 1;
    this.topHeight = top;
    this.bottomHeight = bottom;
    this.setSpacers();
    this.place(at, this.options.create(this.entries[at] as WindowEntry));
    this.drawnAgain(at, at + 1);
    return true;
  }

  /** Draw entries above the run until its top is above `limit`; how many were drawn. */
  private drawAbove(limit: number): number {
    if (this.lo === 0) return 0;
    const firstRoot = this.entries[this.lo]?.view?.root;
    const top = firstRoot ? firstRoot.getBoundingClientRect().top : this.bottomSpacer.getBoundingClientRect().top;
    let need = top - limit;
    if (need <= 0) return 0;
    const end = this.lo;
    while (this.lo > 0 && need > 0) {
      const entry = this.entries[this.lo - 1] as WindowEntry;
      const height = this.heightOf(entry);
      need -= height;
      this.topHeight -= height;
      this.lo -= 1;
      const view = this.options.create(entry);
      entry.view = view;
      this.list.insertBefore(view.root, this.entries[this.lo + 1]?.view?.root ?? this.bottomSpacer);
    }
    this.setSpacers();
    this.drawnAgain(this.lo, end);
    return end - this.lo;
  }

  /** Draw entries below the run until its end is below `limit`; how many were drawn. */
  private drawBelow(limit: number): number {
    if (this.hi === this.entries.length) return 0;
    let need = limit - this.endOfRun();
    if (need <= 0) return 0;
    const start = this.hi;
    while (this.hi < this.entries.length && need > 0) {
      const entry = this.entries[this.hi] as WindowEntry;
      const height = this.heightOf(entry);
      need -= height;
      this.bottomHeight -= height;
      this.hi += 1;
      const view = this.options.create(entry);
      entry.view = view;
      this.list.insertBefore(view.root, this.bottomSpacer);
    }
    this.setSpacers();
    this.drawnAgain(start, this.hi);
    return this.hi - start;
  }

  /** Entries [from, to) were just drawn from their items: measured, their guesses
   * replaced in the spacers by what they are. */
  private drawnAgain(from: number, to: number): void {
    for (let i = from; i < to; i += 1) this.entries[i]?.view?.root.classList.remove("neta-is-new");
    this.measure(from, to);
  }

  /** Release the drawn entries whose box lies wholly above `top` or below `bottom`,
   * except those that hold the selection or focus. Every box is read first, then the
   * entries go: what goes first does not move the boxes read after it. */
  private releaseFar(top: number, bottom: number): boolean {
    const held = heldNodes();
    const holds = (root: HTMLElement) => held.some((node) => root.contains(node));
    const tops: number[] = [];
    for (let i = this.lo; i < this.hi; i += 1) tops.push(this.entries[i]?.view?.root.getBoundingClientRect().top ?? 0);
    tops.push(this.endOfRun());
    const topOf = (i: number) => tops[i - this.lo] as number;
    let from = this.lo;
    while (this.hi - from > 1) {
      const root = this.entries[from]?.view?.root;
      if (!root || holds(root) || topOf(from + 1) >= top) break;
      from += 1;
    }
    let to = this.hi;
    while (to - from > 1) {
      const root = this.entries[to - 1]?.view?.root;
      if (!root || holds(root) || topOf(to - 1) <= bottom) break;
      to -= 1;
    }
    if (from === this.lo && to === this.hi) return false;
    for (let i = this.lo; i < from; i += 1) {
      const entry = this.entries[i] as WindowEntry;
      this.setHeight(entry, topOf(i + 1) - topOf(i));
      this.release(entry, entry.view);
      this.topHeight += this.heightOf(entry);
    }
    for (let i = to; i < this.hi; i += 1) {
      const entry = this.entries[i] as WindowEntry;
      this.setHeight(entry, topOf(i + 1) - topOf(i));
      this.release(entry, entry.view);
      this.bottomHeight += this.heightOf(entry);
    }
    this.lo = from;
    this.hi = to;
    this.setSpacers();
    return true;
  }
}

/** A released item's update: a field the kernel left to the view (`null`: keep yours)
 * keeps what the entry holds. */
function keep(held: ChatItem, next: ChatItem): ChatItem {
  if (next.role !== "assistant" || (next.text !== null && next.thinking !== null)) return next;
  const item = { ...next };
  // What streamed here is the whole text: no note says it was cut.
  if (item.text === null) {
    item.text = held.text ?? "";
    if (item.text_chars && characterCount(item.text) >= item.text_chars) delete item.text_chars;
  }
  if (item.thinking === null) {
    item.thinking = held.thinking ?? "";
    if (item.thinking_chars && characterCount(item.thinking) >= item.thinking_chars) delete item.thinking_chars;
  }
  return item;
}

/** What a response that streamed here holds (its item has not come yet). */
function liveText(view: MessageView): Pick<ChatItem, "text" | "thinking"> {
  const { text, thinking } = view.liveSnapshot();
  return { text, thinking };
}

/** The nodes the page's selection and focus are in: their items stay drawn. */
function heldNodes(): Node[] {
  const nodes: Node[] = [];
  const selection = typeof document.getSelection === "function" ? document.getSelection() : null;
  if (selection && selection.rangeCount > 0 && !selection.isCollapsed) {
    if (selection.anchorNode) nodes.push(selection.anchorNode);
    if (selection.focusNode) nodes.push(selection.focusNode);
  }
  if (document.activeElement && document.activeElement !== document.body) nodes.push(document.activeElement);
  return nodes;
}
