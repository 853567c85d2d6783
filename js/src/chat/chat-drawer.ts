/**
 * A drawer over the chat's conversation that holds another widget of the same kernel: the
 * list of chats (`SessionSidebar`) or the agent's tool panel (`ToolConfigPanel`), opened
 * from the header (./chat-header.ts). The view's binding asks the kernel for the widget
 * and draws it in the drawer's body with the widget manager (`load`); closing the drawer
 * removes that view again. One drawer at a time; Escape or its close button closes it.
 */
import { element, suppressNotebookShortcuts } from "../dom";
import type { Lang, MessageKey } from "../i18n";
import { createInlineError } from "../inline-error";

export type Cleanup = () => void;
/** Draws the widget in `host`; resolves with what removes it. */
export type DrawerLoad = (host: HTMLElement, signal: AbortSignal) => Promise<Cleanup>;

export interface ChatDrawerOptions {
  lang: () => Lang;
  label: (key: MessageKey) => string;
  /** The drawer closed (its close button, Escape, or `close()`). */
  onClosed(): void;
}

export interface ChatDrawer<Name extends string> {
  root: HTMLElement;
  /** The drawer open now, or null. */
  readonly open: Name | null;
  show(name: Name, title: MessageKey, load: DrawerLoad): void;
  close(): void;
  /** Labels in the view's language. */
  render(): void;
  destroy(): void;
}

export function createChatDrawer<Name extends string>(options: ChatDrawerOptions): ChatDrawer<Name> {
  const { label } = options;
  const root = suppressNotebookShortcuts(element("div", "neta-chat-drawer"));
  root.hidden = true;
  root.setAttribute("role", "region");
  const header = element("div", "neta-chat-drawer-header");
  const title = element("span", "neta-chat-drawer-title");
  const closeButton = element("button", "neta-chat-drawer-close", "×");
  closeButton.type = "button";
  header.append(title, closeButton);
  const error = createInlineError(options.lang, "neta-chat-drawer-error");
  const body = element("div", "neta-chat-drawer-body");
  root.append(header, error.root, body);

  let open: Name | null = null;
  let titleKey: MessageKey | null = null;
  let controller: AbortController | null = null;
  let removeView: Cleanup | null = null;

  const clear = () => {
    controller?.abort();
    controller = null;
    removeView?.();
    removeView = null;
    body.replaceChildren();
    error.clear();
  };
  const close = () => {
    if (open === null) return;
    clear();
    open = null;
    root.hidden = true;
    options.onClosed();
  };
  const render = () => {
    title.textContent = titleKey ? label(titleKey) : "";
    closeButton.title = label("close");
    closeButton.setAttribute("aria-label", label("close"));
    root.setAttribute("aria-label", title.textContent);
  };
  closeButton.addEventListener("click", close);
  const onKey = (event: KeyboardEvent) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
    }
  };
  root.addEventListener("keydown", onKey);

  return {
    root,
    get open() {
      return open;
    },
    show(name, key, load) {
      clear();
      open = name;
      titleKey = key;
      render();
      root.hidden = false;
      root.classList.add("neta-is-loading");
      const mine = new AbortController();
      controller = mine;
      load(body, mine.signal).then(
        (cleanup) => {
          if (mine.signal.aborted) {
            cleanup();
            return;
          }
          removeView = cleanup;
          root.classList.remove("neta-is-loading");
        },
        (failure: unknown) => {
          if (mine.signal.aborted) return;
          root.classList.remove("neta-is-loading");
          error.show(failure);
        },
      );
    },
    close,
    render,
    destroy() {
      clear();
      root.removeEventListener("keydown", onKey);
      root.remove();
    },
  };
}
