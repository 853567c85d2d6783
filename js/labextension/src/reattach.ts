/**
 * A notebook reloaded (or opened again) while its kernel lives shows what its file holds.
 * Where the file was saved before a chat cell ran again, that is an older chat whose model
 * the kernel no longer has: its static form — the saved transcript — shows alone
 * (./missing-widgets.ts), and nothing said that the chat the cell displayed since is still
 * live in the kernel.
 *
 * A live widget names the cells that displayed it (`NetaWidget._shown_in`); the widgets'
 * loader puts that in a registry on the page (js/src/shown-in.ts). Here, a cell showing a
 * saved form alone whose live widget the registry knows gets a line above the form: this
 * is as saved, and a button shows the live chat (or other widget) in its place. The button
 * points the cell's widget output at the live model (the notebook changes, as a cell run
 * changes it); the view then draws, and its static form follows it (./static-forms.ts).
 * Nothing changes the notebook unless the button is pressed.
 */
import type { CodeCell } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { HIDDEN_ERROR_CLASS } from "./missing-widgets";
import { WIDGET_VIEW_MIME } from "./protocol";
import { isStaticForm, STATIC_FORM, viewModelId } from "./static-forms";

/** The page's registry of live chats' cells (js/src/shown-in.ts). */
const SHOWN_IN = Symbol.for("neta_nb.shown_in");
/** Dispatched by the loader when it learns a live model's cells. */
export const SHOWN_IN_EVENT = "neta-nb-shown-in";
/** The line offered above a saved form. */
export const REATTACH_CLASS = "neta-nb-reattach";

const OUTPUT_CHILD = "jp-OutputArea-child";
const OUTPUT_PARTS = `.${OUTPUT_CHILD}, .jp-OutputArea-output, .${STATIC_FORM}`;

/** What the line says, over a chat's saved form or another widget's. */
export const REATTACH_WORDS = {
  chat: { text: "This is the chat as it was saved. The kernel still has the live chat this cell showed since.", button: "Show the live chat" },
  other: { text: "This is the output as it was saved. The kernel still has the live widget this cell showed since.", button: "Show it live" },
};

/** The live model that displayed cell `cellId` last, per the registry, or null. */
export function liveModelFor(cellId: string, registry: ReadonlyMap<string, readonly string[]> | undefined): string | null {
  let found: string | null = null;
  for (const [modelId, cells] of registry ?? []) {
    if (cells.includes(cellId)) found = modelId; // the registry keeps the order models came in
  }
  return found;
}

function registry(): ReadonlyMap<string, readonly string[]> | undefined {
  return (globalThis as { [SHOWN_IN]?: Map<string, string[]> })[SHOWN_IN];
}

function offer(child: HTMLElement, onClick: () => void): void {
  const output = child.querySelector(`.${STATIC_FORM}`)?.parentElement;
  if (!output || output.querySelector(`:scope > .${REATTACH_CLASS}`)) return;
  const words = output.querySelector(".neta-static-chat") ? REATTACH_WORDS.chat : REATTACH_WORDS.other;
  const line = document.createElement("div");
  line.className = REATTACH_CLASS;
  const text = document.createElement("span");
  text.textContent = words.text;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "jp-mod-styled jp-mod-accept";
  button.textContent = words.button;
  button.addEventListener("click", () => {
    line.remove();
    onClick();
  });
  line.append(text, button);
  output.prepend(line);
}

function withdraw(child: Element): void {
  for (const line of child.querySelectorAll(`.${REATTACH_CLASS}`)) line.remove();
}

/** Point the widget output before the form `formNode` at the cell's live chat. */
function reattach(cell: CodeCell, formNode: HTMLElement): void {
  const index = cell.outputArea.widgets.findIndex((widget) => widget.node === formNode) - 1;
  const live = liveModelFor(cell.model.id, registry());
  if (index < 0 || live === null) return;
  const outputs = cell.model.outputs;
  const view = outputs.get(index);
  const data = view.data[WIDGET_VIEW_MIME];
  if (viewModelId(view.data) === null || typeof data !== "object" || data === null) return;
  outputs.set(index, {
    output_type: "display_data",
    data: { ...view.data, [WIDGET_VIEW_MIME]: { ...data, model_id: live } } as never,
    metadata: view.metadata as never,
  });
}

/** Offer (or withdraw) the live chat in every cell of `panel` that shows a saved form
 * alone; returns how many offers stand. */
export function offerLiveChats(panel: NotebookPanel): number {
  let offers = 0;
  for (const widget of panel.content.widgets) {
    if (widget.model.type !== "code") continue;
    const cell = widget as CodeCell;
    const area = cell.outputArea;
    const outputs = cell.model.outputs;
    const live = liveModelFor(cell.model.id, registry());
    for (let index = 0; index + 1 < outputs.length && index + 1 < area.widgets.length; index++) {
      const form = area.widgets[index + 1].node;
      const saved = viewModelId(outputs.get(index).data);
      const alone = saved !== null && area.widgets[index].node.classList.contains(HIDDEN_ERROR_CLASS) && isStaticForm(outputs.get(index + 1).data);
      if (!alone || live === null || live === saved) {
        withdraw(form);
        continue;
      }
      offers++;
      offer(form, () => reattach(cell, form));
    }
  }
  return offers;
}

/** Whether a change in the notebook's DOM may change an offer: an output area child
 * shown or hidden, an output or a static form drawn (not our own line, nor the many
 * changes inside a live view). */
function matters(record: MutationRecord): boolean {
  if (record.type === "attributes") return (record.target as Element).classList?.contains(OUTPUT_CHILD) ?? false;
  return [...record.addedNodes].some(
    (node) => node instanceof Element && !node.classList.contains(REATTACH_CLASS) && (node.matches(OUTPUT_PARTS) || node.querySelector(OUTPUT_PARTS) !== null),
  );
}

/** Keep the offers of one notebook current: when a live chat's cells become known, and
 * when its outputs change (a saved form shown alone, an output re-rendered). */
export function followLiveChats(panel: NotebookPanel): void {
  let scheduled = false;
  const check = () => {
    if (scheduled || panel.isDisposed) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (!panel.isDisposed) offerLiveChats(panel);
    });
  };
  document.addEventListener(SHOWN_IN_EVENT, check);
  const observer = new MutationObserver((records) => {
    if (records.some(matters)) check();
  });
  observer.observe(panel.content.node, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
  check();
  panel.disposed.connect(() => {
    document.removeEventListener(SHOWN_IN_EVENT, check);
    observer.disconnect();
  });
}
