// A browser-like document for the tests that draw components (happy-dom): imported first,
// so that modules reading `window` when they load (DOMPurify) find it.
import { Window } from "happy-dom";

const window = new Window({ url: "http://127.0.0.1/" });
const names = [
  "document",
  "Node",
  "Element",
  "HTMLElement",
  "HTMLDivElement",
  "HTMLButtonElement",
  "HTMLInputElement",
  "HTMLTextAreaElement",
  "Text",
  "DocumentFragment",
  "DOMParser",
  "Event",
  "CustomEvent",
  "KeyboardEvent",
  "MouseEvent",
  "PointerEvent",
  "getComputedStyle",
  "requestAnimationFrame",
  "cancelAnimationFrame",
  "ResizeObserver",
  "IntersectionObserver",
  "MutationObserver",
  "NodeFilter",
  "Range",
  "Selection",
] as const;
const target = globalThis as Record<string, unknown>;
const source = window as unknown as Record<string, unknown>;
// Node has an Event and a CustomEvent of its own, which happy-dom's elements refuse to
// dispatch: the document's are used.
const documentsOwn = new Set(["Event", "CustomEvent"]);
for (const name of names) {
  const value = source[name];
  if (value !== undefined && (target[name] === undefined || documentsOwn.has(name))) target[name] = typeof value === "function" && name.startsWith("get") ? value.bind(window) : value;
}
target.window = window;
for (const name of ["requestAnimationFrame", "cancelAnimationFrame"]) target[name] = (source[name] as (...args: unknown[]) => unknown).bind(window);

/** Every element under `root` (itself left out). */
export function nodeCount(root: Element): number {
  return root.querySelectorAll("*").length;
}

/** Close the document (its timers), so that the test process ends. */
export async function closeWindow(): Promise<void> {
  await window.happyDOM.abort();
  window.close();
}
