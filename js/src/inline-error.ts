/**
 * An error shown where the user acted (under the input bar, in an approval card, on a
 * session row), with the look of a turn's error in the chat (`.neta-chat-error`): a failed
 * request must be visible next to the control that sent it, not only in the log.
 */
import { element } from "./dom";
import { t, type Lang } from "./i18n";

export interface InlineError {
  readonly root: HTMLDivElement;
  /** Show `error` (an `Error`'s message, or the value as text). */
  show(error: unknown): void;
  clear(): void;
}

export function createInlineError(lang: () => Lang, className = ""): InlineError {
  const root = element("div", `neta-chat-error neta-inline-error ${className}`.trim());
  root.setAttribute("role", "alert");
  const title = element("span", "neta-chat-error-title");
  const text = element("span", "neta-chat-error-text");
  root.append(title, text);
  root.hidden = true;
  return {
    root,
    show(error) {
      title.textContent = t(lang(), "error");
      text.textContent = error instanceof Error ? error.message : String(error);
      root.hidden = false;
    },
    clear() {
      root.hidden = true;
      text.textContent = "";
    },
  };
}
