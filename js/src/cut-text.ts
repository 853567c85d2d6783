/**
 * Texts that widget state holds only the beginning of (`neta_nb/widgets/state_bounds.py`:
 * a field `f` cut to a preview comes with `f_chars`, the whole one's length). `createCutNote`
 * is the line under such a preview — "Showing 2,000 of 5,242,880 characters · Show all" —
 * whose button fetches the whole text from the kernel. What it fetches lives in the DOM
 * only: it never goes back into state, so a saved notebook stays small.
 */
import "./cut-text.css";
import { element } from "./dom";
import { t, type Lang } from "./i18n";

/** Fetches the whole text; rejects with an `Error` whose message is ready to show. */
export type FetchWhole = () => Promise<string>;

/** A preview of `shown` characters of a whole of `total` (0 when unknown); `args` words it
 * for a call's arguments. */
export interface Cut {
  shown: number;
  total: number;
  kind?: "text" | "args";
}

export interface CutNote {
  /** The note's element: null until a field was first cut (most never are, and a hidden
   * note in every field was a quarter of a long chat's DOM). */
  readonly root: HTMLDivElement | null;
  /** Show the note for `cut`, or hide it (null: the text is whole). `fetchWhole` null:
   * there is nothing to fetch from. */
  set(cut: Cut | null, fetchWhole: FetchWhole | null): void;
  setLang(): void;
  destroy(): void;
}

/**
 * The length of `text` as the kernel counts it: Python counts code points, JS strings UTF-16
 * units, so an emoji is one character there and two here. A preview's `shown` is compared
 * with its `*_chars` (a Python length): counted here the same way, a preview of 20,000
 * emoji does not read "40,000 of 30,000".
 */
export function characterCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count -= 1; // a surrogate pair: one code point
        i += 1;
      }
    }
  }
  return count;
}

const number = (lang: Lang, value: number) => value.toLocaleString(lang === "zh-CN" ? "zh-CN" : "en-US");

/** `onWhole(text)` gets the fetched text; the note hides while the whole is shown. Its
 * element is made the first time a field is cut, and put right after `after` (the preview
 * it is under): a field that is whole costs no node. */
export function createCutNote(lang: () => Lang, onWhole: (text: string) => void, after: Element): CutNote {
  let parts: { root: HTMLDivElement; text: HTMLSpanElement; button: HTMLButtonElement; error: HTMLSpanElement } | null = null;
  let shown = 0;
  let total = 0;
  let kind: "text" | "args" = "text";
  let fetchWhole: FetchWhole | null = null;
  let loading = false;
  let generation = 0; // a newer preview makes an answer still in flight stale

  function render(): void {
    if (!parts) return;
    const { text, button } = parts;
    const current = lang();
    text.textContent =
      kind === "args"
        ? total > 0
          ? t(current, "args_cut", { total: number(current, total) })
          : t(current, "args_cut_unknown")
        : t(current, "text_cut", { shown: number(current, shown), total: number(current, total) });
    button.textContent = t(current, loading ? "loading_full" : "show_all");
    button.disabled = loading;
    button.hidden = fetchWhole === null;
  }

  const onClick = () => {
    if (!fetchWhole || loading || !parts) return;
    const { root, error } = parts;
    const asked = generation;
    loading = true;
    error.textContent = "";
    render();
    fetchWhole()
      .then((whole) => {
        if (asked !== generation) return;
        root.hidden = true;
        onWhole(whole);
      })
      .catch((failure: unknown) => {
        if (asked !== generation) return;
        error.textContent = failure instanceof Error ? failure.message : String(failure);
      })
      .finally(() => {
        if (asked !== generation) return;
        loading = false;
        render();
      });
  };

  function build(): NonNullable<typeof parts> {
    const root = element("div", "neta-cut-note");
    const text = element("span", "neta-cut-note-text");
    const button = element("button", "neta-cut-note-button");
    button.type = "button";
    const error = element("span", "neta-cut-note-error");
    error.setAttribute("role", "alert");
    root.append(text, button, error);
    root.hidden = true;
    button.addEventListener("click", onClick);
    after.after(root);
    return { root, text, button, error };
  }

  return {
    get root() {
      return parts?.root ?? null;
    },
    set(cut, nextFetch) {
      fetchWhole = nextFetch;
      if (cut === null && !parts) return; // whole, and never cut: nothing to draw
      parts ??= build();
      const { root, error } = parts;
      const same =
        cut !== null && !root.hidden && cut.shown === shown && cut.total === total && (cut.kind ?? "text") === kind;
      if (!same) {
        // Another preview (or none): an answer still in flight is for the old one.
        generation += 1;
        loading = false;
        error.textContent = "";
        shown = cut?.shown ?? 0;
        total = cut?.total ?? 0;
        kind = cut?.kind ?? "text";
        root.hidden = cut === null;
      }
      render();
    },
    setLang: render,
    destroy() {
      generation += 1;
      parts?.button.removeEventListener("click", onClick);
      parts?.root.remove();
    },
  };
}

/** Characters per block of a long plain text (see `renderPlainText`). */
const BLOCK_CHARS = 20_000;

/**
 * Show `text` as plain monospace text in `host`. A long one (a whole tool result can be
 * megabytes) goes in blocks of about `BLOCK_CHARS`, cut at line ends, that the browser lays
 * out only near the viewport (`content-visibility: auto`): measured here, one 5.6 MB text
 * node made a JupyterLab theme change take over 30 s; in blocks it stays a page like any
 * other, and find-in-page still sees all of it.
 */
export function renderPlainText(host: HTMLElement, text: string): void {
  const blocks: HTMLElement[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + BLOCK_CHARS);
    if (end < text.length) {
      const lineEnd = text.lastIndexOf("\n", end);
      if (lineEnd > start) end = lineEnd + 1;
    }
    const slice = text.slice(start, end);
    const block = element("pre", "neta-plain-block", slice);
    // A guess at its height until it is first laid out (`auto` then keeps the real one).
    const lines = slice.split("\n").length;
    block.style.containIntrinsicSize = `auto ${Math.ceil(lines * 18)}px`;
    blocks.push(block);
    start = end;
  }
  host.replaceChildren(...blocks);
}
