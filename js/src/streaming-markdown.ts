/**
 * Markdown that grows while a model streams it — the one renderer behind the chat view's
 * answer and the thinking block.
 *
 * Finished blocks (up to the stable boundary, see `stableBoundary`) render once into a
 * `stable` part and are never touched again; only the tail re-renders, at most once per
 * animation frame, with a cursor at the end of the text. Text that arrives is revealed
 * steadily over the next frames (`RevealPace`), not a batch at a time. The final text
 * renders whole at once, so blocks that span a split (a list continued after a blank line)
 * render right.
 */
import { element } from "./dom";
import { healedTail, renderMarkdown, stableBoundary } from "./markdown";
import { RevealPace, wholeCharacters } from "./reveal";

/** The shortest time between two renders of a streaming tail (about 30 per second). */
const RENDER_MS = 30;

/** The class names of the renderer's parts (each host styles its own). */
export interface StreamingMarkdownClasses {
  root: string;
  stable: string;
  tail: string;
  cursor: string;
}

export class StreamingMarkdown {
  readonly root: HTMLDivElement;
  private readonly stable: HTMLDivElement;
  private readonly tail: HTMLDivElement;
  private readonly cursor: HTMLSpanElement;
  private text = "";
  private stableLength = 0;
  /** The text last rendered; `null` once the final text is rendered. */
  private rendered: string | null = "";
  private frame = 0;
  private streaming = false;
  private readonly pace = new RevealPace();
  private renderedAt = Number.NEGATIVE_INFINITY;

  constructor(classes: StreamingMarkdownClasses) {
    this.root = element("div", classes.root);
    this.stable = element("div", classes.stable);
    this.tail = element("div", classes.tail);
    this.cursor = element("span", classes.cursor);
    this.cursor.setAttribute("aria-hidden", "true");
    this.root.append(this.stable, this.tail);
  }

  /** The text held now (rendered, or being revealed over the next frames). */
  get value(): string {
    return this.text;
  }

  /** Streamed text arrives: the tail re-renders at the next frame. */
  append(delta: string): void {
    if (!delta) return;
    this.text += delta;
    this.streaming = true;
    this.root.classList.remove("neta-is-empty");
    this.pace.hold(this.text.length);
    this.schedule();
  }

  /**
   * Show `text`. While streaming, text that extends what is held renders as an append (at
   * the next frame); anything else renders now from scratch. Not streaming: `finish`.
   */
  show(text: string, streaming: boolean): void {
    if (!streaming) {
      this.finish(text);
      return;
    }
    const extendsHeld = this.streaming && text.startsWith(this.text);
    this.text = text;
    this.streaming = true;
    this.root.classList.toggle("neta-is-empty", text.length === 0);
    if (extendsHeld) {
      this.pace.hold(text.length);
      if (this.rendered !== text) this.schedule();
      return;
    }
    this.cancelFrame();
    this.stableLength = 0;
    this.stable.replaceChildren();
    this.pace.showAll(text.length);
    this.renderTail(text);
  }

  /** The final text: rendered whole, once, without a cursor. */
  finish(text: string): void {
    this.cancelFrame();
    this.streaming = false;
    this.pace.showAll(text.length);
    if (text === this.text && this.rendered === null) return;
    this.text = text;
    this.stable.replaceChildren(renderMarkdown(text));
    this.stableLength = text.length;
    this.tail.replaceChildren();
    this.rendered = null;
    this.root.classList.toggle("neta-is-empty", text.length === 0);
  }

  destroy(): void {
    this.cancelFrame();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame((now) => {
      this.frame = 0;
      // At most one render per RENDER_MS: the tail's markdown and the layout it causes
      // cost more than a frame's worth of revealed text is worth.
      if (now - this.renderedAt >= RENDER_MS) {
        const shown = this.text.slice(0, wholeCharacters(this.text, this.pace.frame(now)));
        if (this.rendered !== shown) this.renderTail(shown);
        this.renderedAt = now;
      }
      if (this.pace.behind || this.rendered !== this.text) this.schedule();
    });
  }

  private cancelFrame(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  /** Render `text` (what is held, or the part of it revealed so far) with the cursor. */
  private renderTail(text: string): void {
    const boundary = stableBoundary(text, this.stableLength);
    if (boundary > this.stableLength) {
      this.stable.append(renderMarkdown(text.slice(this.stableLength, boundary)));
      this.stableLength = boundary;
    }
    this.tail.replaceChildren(renderMarkdown(healedTail(text.slice(this.stableLength))));
    cursorHost(this.tail).append(this.cursor);
    this.rendered = text;
  }
}

/**
 * Where the cursor goes: at the end of the text — inside the last paragraph, heading or
 * list item, however deep lists and quotes nest — or after the last block.
 */
function cursorHost(tail: HTMLElement): Element {
  let host: Element = tail;
  let last = tail.lastElementChild;
  while (last) {
    if (/^(P|H[1-6])$/.test(last.tagName)) return last;
    if (!/^(UL|OL|LI|BLOCKQUOTE)$/.test(last.tagName)) break; // e.g. a code block: after it
    if (last.tagName === "LI") host = last;
    const child = last.lastElementChild;
    // Descend only into blocks: an item ending in inline markup (<strong>) is the host.
    last = child && /^(UL|OL|LI|BLOCKQUOTE|P|H[1-6])$/.test(child.tagName) ? child : null;
  }
  return host;
}
