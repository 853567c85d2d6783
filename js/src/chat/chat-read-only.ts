/**
 * The bar a chat view shows in place of its input while it shows, read-only, a session
 * whose turn another kernel runs (Python: `ChatView.show_stored`): who runs it, Refresh, and
 * — once that turn has ended — "Continue here", which resumes it in this kernel. No Send,
 * no Stop: nothing here can act on the other kernel's turn. A batch run's row (opened from
 * its grid) says so instead, and is never continued: its session is the row's answer.
 */
import "./chat-read-only.css";
import type { ReadOnlyState } from "./chat-view-traits";
import { element, whileBusy } from "../dom";
import { t, type Lang } from "../i18n";
import { createInlineError } from "../inline-error";

export interface ReadOnlyActions {
  refresh?(): Promise<unknown>;
  takeOver?(): Promise<unknown>;
}

export interface ReadOnlyBar {
  readonly root: HTMLDivElement;
  update(state: ReadOnlyState | null): void;
  setLang(): void;
  destroy(): void;
}

export function createReadOnlyBar(lang: () => Lang, actions: ReadOnlyActions): ReadOnlyBar {
  const root = element("div", "neta-chat-read-only");
  root.setAttribute("role", "status");
  const tag = element("span", "neta-tag neta-chat-read-only-tag");
  const text = element("span", "neta-chat-read-only-text");
  const buttons = element("div", "neta-chat-read-only-buttons");
  const refresh = element("button", "neta-chat-button neta-chat-refresh");
  refresh.type = "button";
  const takeOver = element("button", "neta-chat-button neta-chat-button-primary neta-chat-take-over");
  takeOver.type = "button";
  buttons.append(refresh, takeOver);
  const error = createInlineError(lang);
  root.append(tag, text, buttons, error.root);
  root.hidden = true;

  let state: ReadOnlyState | null = null;

  function render(): void {
    const current = lang();
    root.hidden = state === null;
    if (!state) return;
    root.classList.toggle("neta-is-busy", state.busy);
    tag.textContent = t(current, "read_only");
    const row = state.batch_row;
    text.textContent =
      typeof row === "number"
        ? t(current, state.busy ? "read_only_batch_row_running" : "read_only_batch_row", { row })
        : state.busy
          ? t(current, "read_only_running", { owner: state.owner })
          : t(current, "read_only_ended");
    refresh.textContent = t(current, "refresh");
    takeOver.textContent = t(current, "continue_here");
    takeOver.hidden = state.busy || typeof row === "number";
  }

  function run(button: HTMLButtonElement, action: (() => Promise<unknown>) | undefined): void {
    if (!action) return;
    error.clear();
    whileBusy([button], action, error.show);
  }
  const onRefresh = () => run(refresh, actions.refresh);
  const onTakeOver = () => run(takeOver, actions.takeOver);
  refresh.addEventListener("click", onRefresh);
  takeOver.addEventListener("click", onTakeOver);

  return {
    root,
    update(next) {
      // The trait is `{}` for a live chat.
      state = next && typeof next.busy === "boolean" ? next : null;
      if (!state) error.clear();
      render();
    },
    setLang: render,
    destroy() {
      refresh.removeEventListener("click", onRefresh);
      takeOver.removeEventListener("click", onTakeOver);
      root.remove();
    },
  };
}
