/**
 * The tool configuration panel's notices: a request that failed (gone after a while, or
 * closed), names in the config that no tool has (each with a "forget" button), and the
 * resolver's warnings (dismissed together).
 */
import "./tool-config-panel-notices.css";
import { element } from "../dom";
import { t, type Lang } from "../i18n";
import type { ForgetRequest } from "./tool-config-panel-traits";

/** What the notices need from the panel. */
export interface NoticesHost {
  send(kind: string, payload?: Record<string, unknown>): Promise<unknown>;
  /** Add an event listener that the panel removes when it is destroyed. */
  listen<K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, handler: (event: HTMLElementEventMap[K]) => void): void;
}

export interface Notices {
  readonly unknownBar: HTMLDivElement;
  readonly warningBar: HTMLDivElement;
  render(lang: Lang, unknown: readonly string[], warnings: readonly string[]): void;
}

export function createNotices(host: NoticesHost): Notices {
  const unknownBar = element("div", "neta-tc-notice neta-tc-unknown");
  const unknownText = element("span", "neta-tc-notice-text");
  const unknownList = element("span", "neta-tc-unknown-list");
  unknownBar.append(unknownText, unknownList);

  const warningBar = element("div", "neta-tc-notice neta-tc-warnings");
  const warningTitle = element("div", "neta-tc-notice-title");
  const warningList = element("ul", "neta-tc-warning-list");
  const warningDismiss = element("button", "neta-tc-link-button");
  warningDismiss.type = "button";
  const warningHead = element("div", "neta-tc-notice-head");
  warningHead.append(warningTitle, warningDismiss);
  warningBar.append(warningHead, warningList);

  host.listen(warningDismiss, "click", () => {
    void host.send("dismiss_warnings");
  });
  host.listen(unknownList, "click", (event) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>("[data-forget]");
    if (target?.dataset.forget) void host.send("forget", { name: target.dataset.forget } satisfies ForgetRequest);
  });

  return {
    unknownBar,
    warningBar,
    render(lang, unknown, warnings) {
      unknownBar.hidden = unknown.length === 0;
      unknownText.textContent = t(lang, "panel_unknown");
      unknownList.replaceChildren(
        ...unknown.map((name) => {
          const item = element("span", "neta-tc-unknown-item");
          const button = element("button", "neta-tc-link-button", t(lang, "panel_forget"));
          button.type = "button";
          button.dataset.forget = name;
          button.title = t(lang, "panel_forget_hint", { name });
          item.append(element("code", undefined, name), button);
          return item;
        }),
      );
      warningBar.hidden = warnings.length === 0;
      warningTitle.textContent = t(lang, "panel_warnings");
      warningDismiss.textContent = t(lang, "panel_dismiss");
      warningList.replaceChildren(...warnings.map((warning) => element("li", undefined, warning)));
    },
  };
}

const ERROR_SHOWN_MS = 8000;

export interface ErrorLine {
  readonly node: HTMLDivElement;
  /** Show why a request failed (`null` hides it). */
  show(message: string | null): void;
  render(lang: Lang): void;
  destroy(): void;
}

export function createErrorLine(listen: NoticesHost["listen"], lang: () => Lang): ErrorLine {
  const node = element("div", "neta-tc-notice neta-tc-error");
  node.setAttribute("role", "alert");
  const text = element("span", "neta-tc-notice-text");
  const close = element("button", "neta-tc-link-button");
  close.type = "button";
  node.append(text, close);
  node.hidden = true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  function show(message: string | null): void {
    clearTimeout(timer);
    node.hidden = message === null;
    text.textContent = message === null ? "" : t(lang(), "panel_request_failed", { error: message });
    if (message !== null) timer = setTimeout(() => show(null), ERROR_SHOWN_MS);
  }
  listen(close, "click", () => show(null));
  return {
    node,
    show,
    render(current) {
      close.textContent = t(current, "close");
    },
    destroy() {
      clearTimeout(timer);
    },
  };
}
