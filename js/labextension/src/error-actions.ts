/**
 * Fix and Explain on a cell's error: an error output (a code cell's traceback) in a
 * notebook that shows a live chat — in one of its cells, or in a side panel opened from
 * it — gets two small buttons in its top right corner. Fix asks that chat for a corrected
 * cell (its agent proposes it with `edit_cell`: the usual diff card, nothing changes
 * without Accept); Explain asks for an explanation only. A notebook without a live chat
 * shows none; a run of the cell that succeeds takes the error output, and the buttons, away.
 *
 * A press goes to one chat view of the notebook (the side panel's, else the last live one
 * in the notebook) as a `neta-nb-error-action` event (js/src/chat/error-actions.ts), which
 * passes it to the kernel: the prompt is made there (neta_nb/widgets/chat/requests/error_actions.py).
 * A chat running a turn refuses: the reason shows beside the buttons, and nothing is sent.
 *
 * A chat view that can answer marks its element (`data-neta-nb-error-actions`) and says so
 * with a `neta-nb-error-actions-changed` event on `document` when it comes and goes.
 */
import type { CodeCell } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";

/** The event a chat view answers (js/src/chat/error-actions.ts). */
export const ERROR_ACTION_EVENT = "neta-nb-error-action";
/** Dispatched on `document` by a chat view that starts or stops answering. */
export const ERROR_ACTIONS_CHANGED = "neta-nb-error-actions-changed";
/** The mark of a chat view that answers (its host element's `data-` attribute). */
const ANSWERING = "[data-neta-nb-error-actions]:not(:has(.neta-is-read-only))";
/** The class of the buttons' bar, and of an output area child that holds one. */
export const ERROR_ACTIONS_CLASS = "neta-nb-error-actions";
const HOLDER_CLASS = "neta-nb-has-error-actions";
const OUTPUT_CHILD = "jp-OutputArea-child";
const OUTPUT_PARTS = `.${OUTPUT_CHILD}, .jp-OutputArea-output`;

export const ERROR_ACTION_WORDS = {
  fix: { text: "Fix", title: "Ask the chat for a corrected cell (shown as a change to accept or reject)" },
  explain: { text: "Explain", title: "Ask the chat to explain this error" },
  sending: "Asking the chat…",
  sent: "Sent to the chat.",
  noChat: "No live chat of this notebook answered.",
};

type Action = keyof typeof ERROR_ACTION_WORDS & ("fix" | "explain");

interface Reply {
  ok: boolean;
  message?: string;
}

/** The chat view a press goes to: the side panel's of this notebook, else the last
 * live one in the notebook; null when the notebook shows none. */
export type ChatFinder = (panel: NotebookPanel) => Element | null;

export function chatIn(panel: NotebookPanel, sidePanelNodes: readonly Element[]): Element | null {
  for (const node of sidePanelNodes) {
    const view = node.querySelector(ANSWERING);
    if (view) return view;
  }
  const inline = panel.content.node.querySelectorAll(ANSWERING);
  return inline.length ? inline[inline.length - 1] : null;
}

interface ErrorOutput {
  ename?: unknown;
  evalue?: unknown;
  traceback?: unknown;
}

/** Send `action` on the error output at `index` of `cell` to `chat`. */
function ask(chat: Element, cell: CodeCell, index: number, action: Action): Promise<Reply> {
  const output = cell.model.outputs.get(index).toJSON() as ErrorOutput;
  const request = {
    action,
    cell_id: cell.model.id,
    execution_count: cell.model.executionCount ?? null,
    source: cell.model.sharedModel.getSource(),
    error: {
      ename: typeof output.ename === "string" ? output.ename : "Error",
      evalue: typeof output.evalue === "string" ? output.evalue : "",
      traceback: Array.isArray(output.traceback) ? output.traceback.map(String) : [],
    },
  };
  return new Promise((resolve) => {
    const detail = { request, respond: resolve, handled: false };
    chat.dispatchEvent(new CustomEvent(ERROR_ACTION_EVENT, { detail, bubbles: true, composed: true }));
    if (!detail.handled) resolve({ ok: false, message: ERROR_ACTION_WORDS.noChat });
  });
}

function bar(onPress: (action: Action, note: HTMLElement, buttons: HTMLButtonElement[]) => void): HTMLElement {
  const line = document.createElement("div");
  line.className = ERROR_ACTIONS_CLASS;
  const note = document.createElement("span");
  note.className = `${ERROR_ACTIONS_CLASS}-note`;
  note.setAttribute("role", "status");
  const buttons = (["fix", "explain"] as const).map((action) => {
    const words = ERROR_ACTION_WORDS[action];
    const button = document.createElement("button");
    button.type = "button";
    button.className = `${ERROR_ACTIONS_CLASS}-button`;
    button.dataset.action = action;
    button.textContent = words.text;
    button.title = words.title;
    button.setAttribute("aria-label", words.title);
    return button;
  });
  for (const button of buttons) {
    button.addEventListener("click", (event) => {
      event.stopPropagation(); // not a click that selects the cell or toggles its output
      onPress(button.dataset.action as Action, note, buttons);
    });
  }
  // Enter and Space press a focused button; they are not the notebook's shortcuts (Enter
  // would put the cell into edit mode instead).
  line.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") event.stopPropagation();
  });
  line.append(note, ...buttons);
  return line;
}

/** Put the buttons on every error output of `panel` (once each), or take them all away
 * when the notebook shows no live chat; returns how many stand. */
export function offerErrorActions(panel: NotebookPanel, find: ChatFinder): number {
  const live = find(panel) !== null;
  let offered = 0;
  for (const widget of panel.content.widgets) {
    if (widget.model.type !== "code") continue;
    const cell = widget as CodeCell;
    const area = cell.outputArea;
    const outputs = cell.model.outputs;
    for (let index = 0; index < area.widgets.length; index++) {
      const child = area.widgets[index].node;
      if (!child.classList.contains(OUTPUT_CHILD)) continue;
      const isError = index < outputs.length && outputs.get(index).type === "error";
      const standing = child.querySelector(`:scope > .${ERROR_ACTIONS_CLASS}`);
      if (!isError || !live) {
        standing?.remove();
        child.classList.remove(HOLDER_CLASS);
        continue;
      }
      offered++;
      if (standing) continue;
      child.classList.add(HOLDER_CLASS);
      child.append(
        bar((action, note, buttons) => {
          const chat = find(panel);
          const at = cell.outputArea.widgets.findIndex((w) => w.node === child);
          if (!chat || at < 0) {
            note.textContent = ERROR_ACTION_WORDS.noChat;
            return;
          }
          for (const button of buttons) button.disabled = true;
          note.textContent = ERROR_ACTION_WORDS.sending;
          ask(chat, cell, at, action).then((reply) => {
            for (const button of buttons) button.disabled = false;
            note.textContent = reply.ok ? ERROR_ACTION_WORDS.sent : (reply.message ?? ERROR_ACTION_WORDS.noChat);
            note.classList.toggle(`${ERROR_ACTIONS_CLASS}-refused`, !reply.ok);
          });
        }),
      );
    }
  }
  return offered;
}

/** Keep the buttons of one notebook current: when its outputs change, and when a chat
 * view of the page comes or goes. */
export function followErrorOutputs(panel: NotebookPanel, find: ChatFinder): void {
  let scheduled = false;
  const check = () => {
    if (scheduled || panel.isDisposed) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (!panel.isDisposed) offerErrorActions(panel, find);
    });
  };
  // An output drawn or taken away (not the many changes inside a live chat's view).
  const matters = (record: MutationRecord) =>
    [...record.addedNodes, ...record.removedNodes].some(
      (node) => node instanceof Element && (node.matches(OUTPUT_PARTS) || node.querySelector(OUTPUT_PARTS) !== null),
    );
  const observer = new MutationObserver((records) => {
    if (records.some(matters)) check();
  });
  observer.observe(panel.content.node, { subtree: true, childList: true });
  document.addEventListener(ERROR_ACTIONS_CHANGED, check);
  check();
  panel.disposed.connect(() => {
    observer.disconnect();
    document.removeEventListener(ERROR_ACTIONS_CHANGED, check);
  });
}
