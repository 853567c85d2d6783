/**
 * A turn that starts where nobody can see it is brought on screen.
 *
 * JupyterLab's Run All scrolls the notebook to its last cell, so the quickstart's turn
 * streamed above the viewport and was over before the user scrolled up to it. Every chat
 * view on the page joins one page-wide registry (shared by every bundle version: it lives
 * on `globalThis`). When a session's turn starts — a view sees `running` become true, or
 * opens while it is — the registry looks, after the page has laid out, at the views of
 * that session's running turn:
 *
 * - one shows enough of its conversation on screen: nothing happens;
 * - it is an outside MCP client's turn (its review views only show it) and a chat that
 *   shows that client's requests as well is on screen: nothing happens;
 * - the user is typing in one of them or in a cell, or has scrolled, clicked or typed
 *   since the turn started: nothing happens (never scroll under the user's hands);
 * - one is in a side panel (the JupyterLab / Notebook 7 extension's, ./side-panel.ts):
 *   that panel is revealed;
 * - else the inline view is scrolled into its scroller's view, as
 *   `scrollIntoView({block: "nearest"})` would, but only in the nearest scrolling ancestor
 *   (a plain `scrollIntoView` also scrolls JupyterLab's own overflow-hidden panels);
 * - an inline view the notebook's windowing left undrawn ("full": cells far from the
 *   viewport leave the page) has no box to scroll to: the extension scrolls its notebook
 *   to its cell (`show`), if that notebook is the one on screen.
 *
 * Until the turn ends, what takes every view off screen again without the user's hand —
 * layout settling (cells above drawn late, their heights changing), the page's own
 * scrolling (JupyterLab's Run All scrolls to the last cell once it is drawn, in a long
 * notebook seconds later) — is answered the same way, a few times at most. Once the user
 * scrolls, clicks or types, the turn is theirs: nothing moves any more.
 *
 * The geometry is pure (`visibleHeight`, `showsEnough`, `nearestScroll`), tested in
 * js/test/keep-in-view.test.ts.
 */
import { inSidePanel, SIDE_PANEL_EVENT } from "./side-panel";

export interface Span {
  top: number;
  bottom: number;
}

/** How much of `span` lies inside every one of `clips`. */
export function visibleHeight(span: Span, clips: readonly Span[]): number {
  let top = span.top;
  let bottom = span.bottom;
  for (const clip of clips) {
    top = Math.max(top, clip.top);
    bottom = Math.min(bottom, clip.bottom);
  }
  return Math.max(0, bottom - top);
}

/** Whether `visible` pixels of a conversation `height` tall are enough to watch a turn:
 * half of it, or 200 px of a taller one. */
export function showsEnough(visible: number, height: number): boolean {
  return height > 0 && visible >= Math.min(height / 2, 200);
}

/** The scroll (px, positive: down) that brings `target` inside `view` with `margin` to
 * spare, as `scrollIntoView({block: "nearest"})`: nothing when it is inside; its top at
 * the top when it is above or taller than the view; else its bottom at the bottom. */
export function nearestScroll(target: Span, view: Span, margin = 8): number {
  const top = view.top + margin;
  const bottom = view.bottom - margin;
  if (target.top >= top && target.bottom <= bottom) return 0;
  if (target.top < top || target.bottom - target.top > bottom - top) return target.top - top;
  return target.bottom - bottom;
}

/** A chat view as the registry sees it. */
export interface TurnView {
  /** The session it shows now, and whether its turn runs (a stale view of an older
   * widget of the same session — a chat cell run again — is not a view of this turn). */
  session(): string;
  running(): boolean;
  /** It also shows what outside MCP clients wait for (a chat the user works in); false
   * for a client's own review view (widgets/outside_reviews.py). */
  hostsOutside?(): boolean;
  /** The view's root element and the conversation's scroller in it. */
  readonly root: HTMLElement;
  readonly transcript: HTMLElement;
}

export interface TurnWatch {
  /** The view's `running` state, as it arrives (and once when it opens). */
  running(value: boolean): void;
  dispose(): void;
}

/** When to look again after a turn started: layout settling (cells above drawn at last,
 * their heights changing) moves the view without a scroll of anyone's. */
const SETTLE_CHECKS_MS = [150, 400, 800, 1500, 2500];
/** At most this many reveals per turn (the first, and answers to the page's own later
 * scrolling): never a fight with something that keeps scrolling away. */
const MAX_REVEALS = 6;

interface Registry {
  views: Set<TurnView>;
  /** Sessions whose running turn is watched, and what stops watching. */
  handled: Map<string, () => void>;
  /** When the user last scrolled, clicked or typed anywhere on the page (ms). */
  actedAt: number;
  listening: boolean;
}

const REGISTRY = Symbol.for("neta_nb.turnViews");

function registry(): Registry {
  const global = globalThis as { [REGISTRY]?: Registry };
  global[REGISTRY] ??= { views: new Set(), handled: new Map(), actedAt: 0, listening: false };
  const found = global[REGISTRY];
  if (!found.listening && typeof window !== "undefined") {
    found.listening = true;
    const acted = () => {
      found.actedAt = performance.now();
    };
    for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) {
      window.addEventListener(type, acted, { capture: true, passive: true });
    }
  }
  return found;
}

/** The boxes that clip `node`: every ancestor below `<body>` that does not let overflow
 * show, and the window (`<body>`'s and `<html>`'s overflow is the window's: JupyterLab's
 * `<body>` is 0 px tall, its shell positioned absolutely). */
function clipsOf(node: Element): Span[] {
  const clips: Span[] = [{ top: 0, bottom: window.innerHeight }];
  for (let parent = node.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
    const overflow = getComputedStyle(parent).overflowY;
    if (overflow !== "visible") {
      const box = parent.getBoundingClientRect();
      clips.push({ top: box.top, bottom: box.bottom });
    }
  }
  return clips;
}

function rendered(node: Element): boolean {
  if (!node.isConnected) return false;
  const check = (node as Element & { checkVisibility?: (options?: object) => boolean }).checkVisibility;
  if (check && !check.call(node, { visibilityProperty: true })) return false;
  const box = node.getBoundingClientRect();
  return box.width > 0 && box.height > 0;
}

/** Whether enough of the view's conversation shows on screen to watch a turn. */
export function onScreen(view: TurnView): boolean {
  if (!rendered(view.transcript)) return false;
  const box = view.transcript.getBoundingClientRect();
  return showsEnough(visibleHeight(box, clipsOf(view.transcript)), box.height);
}

function editing(element: Element | null): boolean {
  if (!(element instanceof HTMLElement)) return false;
  return element.isContentEditable || element.localName === "textarea" || (element.localName === "input" && (element as HTMLInputElement).type !== "button");
}

/** The nearest ancestor that scrolls vertically (the notebook's scroller). */
function scrollerOf(node: Element): HTMLElement | null {
  for (let parent = node.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
    const overflow = getComputedStyle(parent).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && parent.scrollHeight > parent.clientHeight) return parent;
  }
  const page = document.scrollingElement;
  return page instanceof HTMLElement && page.scrollHeight > page.clientHeight ? page : null;
}

function scrollIntoScroller(view: TurnView): void {
  const scroller = scrollerOf(view.root);
  if (!scroller) return;
  const isPage = scroller === document.scrollingElement;
  const box = isPage ? { top: 0, bottom: window.innerHeight } : scroller.getBoundingClientRect();
  const delta = nearestScroll(view.root.getBoundingClientRect(), { top: box.top, bottom: box.bottom });
  if (delta !== 0) scroller.scrollBy({ top: delta, behavior: "instant" });
}

function revealSidePanel(view: TurnView): void {
  const detail = { action: "reveal", handled: false, respond: () => undefined };
  view.root.dispatchEvent(new CustomEvent(SIDE_PANEL_EVENT, { detail, bubbles: true, composed: true }));
}

/** Ask the extension to scroll the notebook to the cell holding `view`: its windowing
 * ("full") leaves cells far from the viewport undrawn, with no box to scroll to. */
function showCell(view: TurnView): boolean {
  const detail = { action: "show", element: view.root, handled: false, respond: () => undefined };
  document.dispatchEvent(new CustomEvent(SIDE_PANEL_EVENT, { detail }));
  return detail.handled;
}

function afterLayout(callback: () => void): void {
  requestAnimationFrame(() => requestAnimationFrame(callback));
}

/** Keep a view of `session` on screen during its turn (see the module's note); returns
 * what stops watching (the turn ended). */
function handleTurn(reg: Registry, session: string, since: number): () => void {
  let reveals = 0;
  let stopped = false;
  let pending = false;
  const attempt = (): boolean => {
    if (stopped || reg.actedAt > since) return false; // over, or the user acts
    const views = Array.from(reg.views).filter((view) => view.session() === session && view.running());
    if (views.length === 0 || views.some(onScreen)) return false;
    // An outside client's turn (only its review views show it), while the user has a chat
    // on screen that shows that client's requests too: the page stays where the user is.
    if (views.every((view) => view.hostsOutside?.() === false) && Array.from(reg.views).some((view) => view.hostsOutside?.() === true && view.root.isConnected && onScreen(view))) return false;
    const active = document.activeElement;
    if (views.some((view) => view.root.contains(active)) || editing(active)) return false;
    if (reveals >= MAX_REVEALS) return false;
    const side = views.find((view) => view.root.isConnected && inSidePanel(view.root));
    const inline = views.find((view) => !inSidePanel(view.root) && rendered(view.root));
    if (side) revealSidePanel(side);
    else if (inline) scrollIntoScroller(inline);
    // Undrawn by the notebook's windowing, or in a notebook not shown (then the extension
    // does nothing).
    else if (!views.some((view) => !inSidePanel(view.root) && showCell(view))) return false;
    reveals++;
    return true;
  };
  const check = () => {
    if (pending || stopped) return;
    pending = true;
    afterLayout(() => {
      pending = false;
      attempt();
    });
  };
  // The page's own scrolling may come later and take the view away: JupyterLab's Run All
  // scrolls to the last cell once that cell is drawn, which in a long notebook can be
  // seconds after the turn started. A scroll nobody's hand made is answered.
  const timers = SETTLE_CHECKS_MS.map((delay) => setTimeout(check, delay));
  document.addEventListener("scroll", check, { capture: true, passive: true });
  check();
  return () => {
    stopped = true;
    for (const timer of timers) clearTimeout(timer);
    document.removeEventListener("scroll", check, { capture: true });
  };
}

/** Join the page's registry; the view reports its `running` state through the result. */
export function watchTurns(view: TurnView): TurnWatch {
  const reg = registry();
  reg.views.add(view);
  return {
    running(value) {
      const session = view.session();
      if (!session) return;
      if (!value) {
        reg.handled.get(session)?.();
        reg.handled.delete(session);
        return;
      }
      if (reg.handled.has(session)) return;
      reg.handled.set(session, handleTurn(reg, session, performance.now()));
    },
    dispose() {
      reg.views.delete(view);
    },
  };
}
