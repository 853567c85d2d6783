/** Small DOM construction functions: components build their DOM once and then mutate it. */

export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  // textContent, never innerHTML: model text must not become markup by accident.
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Toggle a set of modifier classes so exactly `active` (if any) of `all` is present. */
export function setModifier(node: Element, prefix: string, all: readonly string[], active: string | null): void {
  for (const name of all) node.classList.toggle(`${prefix}${name}`, name === active);
}

/**
 * A body that folds with a height transition (theme.css `.neta-collapsible`): a one-row grid
 * animating between `1fr` and `0fr`, its content in an inner wrapper that clips. Starts open
 * unless `className` carries `neta-is-closed`.
 */
export function createCollapsible(className: string, ...content: Node[]): {
  root: HTMLDivElement;
  setOpen(open: boolean): void;
} {
  const root = element("div", `neta-collapsible ${className}`.trim());
  const inner = element("div", "neta-collapsible-inner");
  inner.append(...content);
  root.append(inner);
  return { root, setOpen: (open) => root.classList.toggle("neta-is-closed", !open) };
}

/** A header that behaves as a button for mouse and keyboard. */
export function makeToggle(node: HTMLElement, onToggle: () => void): () => void {
  node.setAttribute("role", "button");
  node.tabIndex = 0;
  suppressNotebookShortcuts(node); // Enter / Space toggle it, they do not edit the cell
  const onClick = () => onToggle();
  const onKey = (event: KeyboardEvent) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onToggle();
    }
  };
  node.addEventListener("click", onClick);
  node.addEventListener("keydown", onKey);
  return () => {
    node.removeEventListener("click", onClick);
    node.removeEventListener("keydown", onKey);
  };
}

/**
 * Keys typed into `node` reach it, never the notebook's shortcuts. JupyterLab and Notebook 7
 * handle keydown on the document in the capture phase, before the element sees it: without
 * this, Shift+Enter in the chat box re-ran the chat's own cell (the view replaced, the
 * session recreated, the typed text lost) and Escape left the cell's edit mode. Lumino skips
 * its key bindings for events from inside an element with this attribute.
 */
export function suppressNotebookShortcuts<T extends HTMLElement>(node: T): T {
  node.setAttribute("data-lm-suppress-shortcuts", "true");
  return node;
}

const SVG = "http://www.w3.org/2000/svg";

/** A stroked 16×16 icon drawn from path data (an emoji would depend on the system's
 * fonts: headless Chromium has none and draws a box). */
export function svgIcon(className: string, paths: readonly string[]): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", className);
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("width", "14");
  svg.setAttribute("height", "14");
  svg.setAttribute("aria-hidden", "true");
  for (const d of paths) {
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

/** Run a kernel request from a button: the buttons are disabled until it settles, and a
 * failure goes to `onError` (an inline error next to what was clicked). */
export function whileBusy(buttons: readonly HTMLButtonElement[], action: () => Promise<unknown>,
  onError: (error: unknown) => void): void {
  for (const button of buttons) button.disabled = true;
  action()
    .catch(onError)
    .finally(() => {
      for (const button of buttons) button.disabled = false;
    });
}

/* Where a long line of code may wrap besides its spaces: before a `.` (not a decimal point)
   or `[` and after a `(` or `,` (not before a closing bracket), so that `sales["rating"].dropna().astype(int)`
   wraps as `sales["rating"]` / `.dropna().astype(int)` and not at the edge of the box. */
const CODE_BREAK = /(?<=[^\s.\d])(?=\.)|(?<=[^\s.])(?=\[)|(?<=[(,])(?=[^\s)\]])/g;

/** Append `text` to `parent` as text with `<wbr>` at the places a line of code can wrap
 * (the text itself, as copied or read, is unchanged). */
export function appendCodeText(parent: Node, text: string): void {
  let from = 0;
  for (const at of codeBreaks(text)) {
    parent.appendChild(document.createTextNode(text.slice(from, at)));
    parent.appendChild(document.createElement("wbr"));
    from = at;
  }
  parent.appendChild(document.createTextNode(text.slice(from)));
}

/** The offsets in `text` where `appendCodeText` puts a `<wbr>`, in order. */
export function codeBreaks(text: string): number[] {
  return Array.from(text.matchAll(CODE_BREAK), (match) => match.index ?? 0).filter((at) => at > 0);
}

/** Give every text inside the `pre` elements under `root` its places to wrap. */
export function addCodeBreaks(root: ParentNode): void {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts: Text[] = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node as Text);
    for (const node of texts) {
      const pieces = document.createDocumentFragment();
      appendCodeText(pieces, node.data);
      if (pieces.childNodes.length > 1) node.replaceWith(pieces);
    }
  }
}
