/**
 * Deleting a session from the session list: a row's delete button (shown on hover and on
 * focus; the Delete key on a focused row does the same) turns the row's subtitle into a
 * confirmation — "Delete this chat…? [Delete] [Cancel]", Escape cancels — and the Undo bar
 * under the header offers the session back until the kernel deletes it for good (Python:
 * `SessionSidebar.delete_session`, `UNDO_SECONDS`). Knows nothing of anywidget.
 */
import { element, svgIcon, whileBusy } from "../dom";
import { t, type Lang } from "../i18n";
import type { InlineError } from "../inline-error";

/** The session the Undo bar offers back (Python twin: `DeletedSession`). */
export interface DeletedSession {
  id: string;
  title: string;
}

/** `delete`: take a session off the list, to be deleted unless undone. */
export interface DeleteRequest {
  session_id: string;
}

const TRASH = ["M3 4.5h10", "M6.5 4.5V3h3v1.5", "M4.5 4.5l.7 8.5h5.6l.7-8.5", "M7 7v4", "M9 7v4"];

export interface RowDelete {
  /** The row's delete button (placed by the row). */
  readonly button: HTMLButtonElement;
  /** Ask to confirm (the button, or the Delete key on the row). */
  ask(): void;
  readonly asking: boolean;
  setLang(): void;
  destroy(): void;
}

/**
 * The delete control of one row. `subtitle` is hidden while the confirmation shows in its
 * place; `remove()` sends the request (the row disappears when the list says so).
 */
export function createRowDelete(
  row: HTMLElement,
  subtitle: HTMLElement,
  lang: () => Lang,
  error: InlineError,
  remove: () => Promise<unknown>,
): RowDelete {
  const button = element("button", "neta-sidebar-delete");
  button.type = "button";
  button.tabIndex = -1; // the row is the tab stop: Delete on it, or a pointer on this
  button.append(svgIcon("neta-sidebar-delete-icon", TRASH));
  const confirm = element("div", "neta-sidebar-confirm");
  confirm.setAttribute("role", "group");
  const question = element("span", "neta-sidebar-confirm-text");
  const yes = element("button", "neta-chat-button neta-sidebar-confirm-delete");
  yes.type = "button";
  const no = element("button", "neta-chat-button neta-sidebar-confirm-cancel");
  no.type = "button";
  confirm.append(question, yes, no);
  confirm.hidden = true;
  subtitle.after(confirm);
  let asking = false;

  function render(): void {
    const current = lang();
    button.title = t(current, "delete_session_hint");
    button.setAttribute("aria-label", t(current, "delete_session"));
    question.textContent = t(current, "delete_confirm");
    yes.textContent = t(current, "delete_confirm_button");
    no.textContent = t(current, "cancel");
  }

  function show(on: boolean): void {
    asking = on;
    confirm.hidden = !on;
    subtitle.hidden = on;
    row.classList.toggle("neta-is-confirming", on);
  }

  function ask(): void {
    if (asking) return;
    error.clear();
    show(true);
    no.focus(); // the safe answer under the keyboard
  }

  function cancel(): void {
    show(false);
    row.focus();
  }

  const onButton = (event: Event) => {
    event.stopPropagation(); // not the row's open
    ask();
  };
  const onYes = (event: Event) => {
    event.stopPropagation();
    whileBusy([yes, no], remove, (reason: unknown) => {
      show(false);
      error.show(reason);
    });
  };
  const onNo = (event: Event) => {
    event.stopPropagation();
    cancel();
  };
  const onKey = (event: KeyboardEvent) => {
    event.stopPropagation(); // Enter / Space on these buttons must not reach the row
    if (event.key === "Escape") {
      event.preventDefault();
      cancel();
    }
  };
  button.addEventListener("click", onButton);
  yes.addEventListener("click", onYes);
  no.addEventListener("click", onNo);
  confirm.addEventListener("keydown", onKey);
  render();

  return {
    button,
    ask,
    get asking() {
      return asking;
    },
    setLang: render,
    destroy() {
      button.removeEventListener("click", onButton);
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      confirm.removeEventListener("keydown", onKey);
    },
  };
}

export interface UndoBar {
  readonly root: HTMLDivElement;
  update(deleted: DeletedSession | null): void;
  setLang(): void;
  destroy(): void;
}

/** "Deleted “title”. [Undo]" while the kernel offers the session back. */
export function createUndoBar(lang: () => Lang, error: InlineError, undo: () => Promise<unknown>): UndoBar {
  const root = element("div", "neta-sidebar-undo");
  root.setAttribute("role", "status");
  const text = element("span", "neta-sidebar-undo-text");
  const button = element("button", "neta-chat-button neta-sidebar-undo-button");
  button.type = "button";
  root.append(text, button);
  root.hidden = true;
  let deleted: DeletedSession | null = null;

  function render(): void {
    const current = lang();
    root.hidden = deleted === null;
    text.textContent = deleted ? t(current, "session_deleted", { title: deleted.title }) : "";
    text.title = text.textContent; // a long title is cut in the bar
    button.textContent = t(current, "undo");
  }

  const onUndo = () => {
    error.clear();
    whileBusy([button], undo, error.show);
  };
  button.addEventListener("click", onUndo);
  render();

  return {
    root,
    update(next) {
      // The trait is `{}` once nothing is offered back.
      deleted = next && typeof next.id === "string" && next.id ? next : null;
      render();
    },
    setLang: render,
    destroy() {
      button.removeEventListener("click", onUndo);
      root.remove();
    },
  };
}
