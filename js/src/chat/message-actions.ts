/**
 * The actions on a message of the chat view (Python: `ChatView` handles
 * `message_action`): on a prompt, Edit (the bubble becomes an editor: Enter or "Send"
 * resends it, Escape cancels), Rewind (back to just before it) and Fork; on an answer,
 * Retry (its prompt again) and Fork; a rewound prompt goes back into the input. Nothing is lost: what a retry, an edit or a rewind
 * replaces stays in the store as a branch. On a notebook page, a Rewind or Fork with the
 * agent's accepted cell changes after the message asks first, with a box to put the cells
 * back too ("also undo the notebook changes made after this point"; the kernel does it:
 * `notebook: true`, see neta_nb/tools/notebook/changes/restore.py). The bar shows on hover and while a button in it
 * has the focus (its buttons are in the tab order), and not while a turn runs. Only the
 * session's own messages have it, not a sub-agent's.
 */
import { element, whileBusy } from "../dom";
import { t, type Lang, type MessageKey } from "../i18n";

export type MessageAction = "retry" | "edit" | "rewind" | "fork";

/** `message_action` (Python twin: `MessageActionRequest`). */
export interface MessageActionRequest {
  action: MessageAction;
  message_id: string;
  /** `edit`: the new text of the prompt. */
  text?: string;
  /** `rewind`, `fork`: put back the notebook's cells the agent changed after it too. */
  notebook?: boolean;
}

/** `message_action`'s reply (Python twin: `MessageActionReply`): the session shown and,
 * for a rewind or fork with `notebook`, what the page did. */
export interface MessageActionReply {
  session_id: string;
  notebook?: Record<string, unknown>;
}

export interface MessageActionsOptions {
  lang: () => Lang;
  act(request: MessageActionRequest): Promise<unknown>;
  onError(error: unknown): void;
  /** A rewind is done: its prompt's text, which the input takes back. */
  onRewound?(text: string): void;
  /** Whether the chat is on a notebook page that can put cells back (the extension). */
  onNotebookPage?(): boolean;
  /** The agent's accepted cell changes in the messages after this one, drawn or not (the
   * transcript counts them: a long chat draws only the messages near the viewport). */
  changesAfter?(messageId: string): number;
  /** A rewind or fork put the notebook back: what it did (`NotebookRestore.to_json()`). */
  onNotebookRestored?(outcome: unknown): void;
  /** What a rewind, retry or edit replaces is kept as a branch (the session has a store);
   * when not, they ask first. */
  keepsBranches?(): boolean;
}

const LABEL: Record<MessageAction, [MessageKey, MessageKey]> = {
  retry: ["message_retry", "message_retry_hint"],
  edit: ["message_edit", "message_edit_hint"],
  rewind: ["message_rewind", "message_rewind_hint"],
  fork: ["message_fork", "message_fork_hint"],
};

/** The hints of a chat without a store, which keeps no branch (the action asks first). */
const UNKEPT_HINT: Record<MessageAction, MessageKey> = {
  retry: "message_retry_hint_unkept",
  edit: "message_edit_hint_unkept",
  rewind: "message_rewind_hint_unkept",
  fork: "message_fork_hint_unkept",
};

const ACTIONS: Record<"user" | "assistant", readonly MessageAction[]> = {
  user: ["edit", "rewind", "fork"],
  assistant: ["retry", "fork"],
};

/**
 * Add the bar to one message's `root`. `messageId()` and `text()` are read when a button
 * is used (the item may change after the view is made); `bubble` is where a prompt's text
 * is drawn (the editor takes its place).
 */
export function addMessageActions(
  root: HTMLElement,
  role: "user" | "assistant",
  messageId: () => string,
  text: () => string,
  bubble: HTMLElement | null,
  options: MessageActionsOptions,
): { setLang(): void } {
  const bar = element("div", "neta-msg-actions");
  bar.setAttribute("role", "toolbar");
  const buttons = ACTIONS[role].map((action) => {
    const button = element("button", `neta-msg-action neta-msg-action-${action}`);
    button.type = "button";
    button.dataset.action = action;
    button.addEventListener("click", () => {
      if (action === "edit") {
        startEdit();
        return;
      }
      run({ action, message_id: messageId() }, button);
    });
    bar.append(button);
    return button;
  });
  root.append(bar);

  /** Without a store nothing is kept: say what the action will drop, and go on only when
   * the user confirms (Escape or Cancel leaves everything as it was). */
  function run(request: MessageActionRequest, button: HTMLButtonElement | null): void {
    // A fork drops nothing, and the view shows it with Back to the original.
    const unkept = request.action !== "fork" && options.keepsBranches?.() === false;
    const changes = request.action === "rewind" || request.action === "fork" ? notebookChangesAfter() : 0;
    if (!unkept && changes === 0) {
      act(request, button);
      return;
    }
    root.querySelector(":scope > .neta-msg-confirm")?.remove();
    const lang = options.lang();
    const box = element("div", "neta-msg-confirm");
    box.setAttribute("role", "alertdialog");
    const warning = element("div", "neta-msg-confirm-text", t(lang, "message_drop_unkept"));
    warning.hidden = !unkept;
    const also = element("label", "neta-msg-confirm-notebook");
    const check = element("input", "neta-msg-confirm-notebook-check");
    check.type = "checkbox";
    also.append(check, document.createTextNode(t(lang, "message_notebook_also", { n: changes })));
    also.title = t(lang, "message_notebook_also_hint");
    also.hidden = changes === 0;
    box.setAttribute("aria-label", unkept ? (warning.textContent ?? "") : t(lang, LABEL[request.action][0]));
    const go = element("button", "neta-chat-button neta-chat-button-primary neta-msg-confirm-go",
      t(lang, request.action === "edit" ? "message_edit_send" : LABEL[request.action][0]));
    go.type = "button";
    const cancel = element("button", "neta-chat-button neta-msg-confirm-cancel", t(lang, "cancel"));
    cancel.type = "button";
    const row = element("div", "neta-msg-editor-buttons");
    row.append(cancel, go);
    box.append(warning, also, row);
    root.append(box);
    const back = () => {
      box.remove();
      buttons[0]?.focus();
    };
    go.addEventListener("click", () => {
      box.remove();
      act(changes > 0 && check.checked ? { ...request, notebook: true } : request, button);
    });
    cancel.addEventListener("click", back);
    box.addEventListener("keydown", (event) => {
      event.stopPropagation(); // not the notebook's shortcuts
      if (event.key === "Escape") {
        event.preventDefault();
        back();
      }
    });
    cancel.focus(); // the safe answer under the keyboard: Enter twice drops nothing
  }

  /** The agent's accepted cell changes after this message, when the chat is on a notebook
   * page that can put them back; 0 otherwise. */
  function notebookChangesAfter(): number {
    if (!options.onNotebookPage?.()) return 0;
    return options.changesAfter?.(messageId()) ?? 0;
  }

  function act(request: MessageActionRequest, button: HTMLButtonElement | null): void {
    // Read before the action: a rewind takes this prompt out of the transcript.
    const prompt = request.action === "rewind" ? text() : null;
    whileBusy(button ? [button] : [], async () => {
      const reply = (await options.act(request)) as MessageActionReply | null | undefined;
      if (prompt !== null) options.onRewound?.(prompt);
      if (request.notebook) options.onNotebookRestored?.(reply?.notebook);
    }, options.onError);
  }

  function startEdit(): void {
    if (!bubble || root.classList.contains("neta-is-editing")) return;
    root.classList.add("neta-is-editing");
    const editor = element("div", "neta-msg-editor");
    const area = element("textarea", "neta-msg-editor-text");
    area.value = text();
    area.rows = Math.min(8, Math.max(2, area.value.split("\n").length));
    area.setAttribute("aria-label", t(options.lang(), "message_edit"));
    const send = element("button", "neta-chat-button neta-chat-button-primary neta-msg-editor-send", t(options.lang(), "message_edit_send"));
    send.type = "button";
    const cancel = element("button", "neta-chat-button neta-msg-editor-cancel", t(options.lang(), "cancel"));
    cancel.type = "button";
    const row = element("div", "neta-msg-editor-buttons");
    row.append(cancel, send);
    editor.append(area, row);
    bubble.hidden = true;
    bubble.after(editor);
    const close = () => {
      editor.remove();
      bubble.hidden = false;
      root.classList.remove("neta-is-editing");
    };
    const submit = () => {
      const wanted = area.value.trim();
      if (!wanted) return;
      close();
      run({ action: "edit", message_id: messageId(), text: wanted }, null);
    };
    send.addEventListener("click", submit);
    cancel.addEventListener("click", () => {
      close();
      buttons[0]?.focus();
    });
    area.addEventListener("keydown", (event) => {
      event.stopPropagation(); // not the notebook's shortcuts
      if (event.key === "Escape") {
        event.preventDefault();
        close();
        buttons[0]?.focus();
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        submit();
      }
    });
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  }

  function setLang(): void {
    const lang = options.lang();
    bar.setAttribute("aria-label", t(lang, "message_actions"));
    const unkept = options.keepsBranches?.() === false;
    for (const button of buttons) {
      const action = button.dataset.action as MessageAction;
      const [label, hint] = LABEL[action];
      button.textContent = t(lang, label);
      button.title = t(lang, unkept ? UNKEPT_HINT[action] : hint);
    }
  }
  setLang();
  return { setLang };
}
