/**
 * Model and tool text as sanitized markdown: marked parses, DOMPurify sanitizes, and the
 * result is a DocumentFragment — never an HTML string assigned to innerHTML.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

// A private Marked instance: another bundle on the page configuring the global `marked`
// cannot change how we render.
const marked = new Marked({ gfm: true, breaks: false, async: false });

let hooksInstalled = false;

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // Links open outside the notebook and never get the opener. DOMPurify already drops
  // `javascript:` and other unsafe URLs (its default allowed-URI pattern).
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node instanceof Element && node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });
}

const SANITIZE_OPTIONS = {
  RETURN_DOM_FRAGMENT: true as const,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
};

/** Sanitized DOM for a markdown string. */
export function renderMarkdown(text: string): DocumentFragment {
  installHooks();
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, SANITIZE_OPTIONS);
}

/** Replace the children of `target` with the sanitized rendering of `text`. */
export function setMarkdown(target: HTMLElement, text: string): void {
  target.replaceChildren(renderMarkdown(text));
}

/**
 * The end of the longest prefix of `text` (from `start`) that ends at a blank line outside a
 * code fence. Blocks before it will not change when more text is appended, so a streaming
 * view renders them once and re-renders only the tail.
 */
export function stableBoundary(text: string, start: number): number {
  let boundary = start;
  let inFence = false;
  let lineStart = start;
  let previousBlank = false;
  while (lineStart < text.length) {
    const newline = text.indexOf("\n", lineStart);
    if (newline === -1) break; // the last line may still grow
    const line = text.slice(lineStart, newline);
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    const blank = line.trim() === "";
    if (blank && !inFence && !previousBlank && lineStart > start) boundary = newline + 1;
    previousBlank = blank;
    lineStart = newline + 1;
  }
  return boundary;
}
