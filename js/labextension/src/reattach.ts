/**
 * A notebook reloaded (or opened again) while its kernel lives shows what its file holds.
 * Where the file was saved before a chat cell ran again, the cell shows an older chat: one
 * whose model the kernel no longer has (its static form — the saved transcript — shows
 * alone, ./missing-widgets.ts), or, in the same kernel, the older chat itself, live. Nothing
 * said that the chat the cell displayed since is still live in the kernel.
 *
 * A live widget names the cells that displayed it and the runs that did
 * (`NetaWidget._shown_in`); the widgets' loader puts that in a registry on the page
 * (js/src/shown-in.ts). Here, where a cell's latest run displayed one widget and the cell
 * shows another — a saved form alone, or a view of a widget an earlier run displayed — a
 * line above it says so, and a button shows the newer widget in its place: it points the
 * cell's widget output at the live model (the notebook changes, as a cell run changes it);
 * the view then draws, and its static form follows it (./static-forms.ts). Nothing
 * changes the notebook unless the button is pressed. A run that displayed several widgets
 * is left alone (which output showed which is not known).
 */
import type { CodeCell } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { HIDDEN_ERROR_CLASS } from "./missing-widgets";
import { WIDGET_VIEW_MIME } from "./protocol";
import { isStaticForm, STATIC_FORM, viewModelId } from "./static-forms";

/** The page's registry of live widgets' cells (js/src/shown-in.ts): model id → {cell id:
 * the number of the run that displayed it}. */
const SHOWN_IN = Symbol.for("neta_nb.shown_in");
export type Registry = ReadonlyMap<string, Readonly<Record<string, number>>>;
/** Dispatched by the loader when it learns a live model's cells. */
export const SHOWN_IN_EVENT = "neta-nb-shown-in";
/** The line offered above a saved form or an older view. */
export const REATTACH_CLASS = "neta-nb-reattach";

const OUTPUT_CHILD = "jp-OutputArea-child";
const OUTPUT = "jp-OutputArea-output";
const OUTPUT_PARTS = `.${OUTPUT_CHILD}, .${OUTPUT}, .${STATIC_FORM}`;
/** The class of a chat's static form (neta_nb/widgets/chat/static.py). */
const CHAT_FORM = "neta-static-chat";

/** What the line says: over a saved form (of a chat or another widget), over an older
 * live view. */
export const REATTACH_WORDS = {
  savedChat: { text: "This is the chat as it was saved. The kernel still has the live chat this cell showed since.", button: "Show the live chat" },
  saved: { text: "This is the output as it was saved. The kernel still has the live widget this cell showed since.", button: "Show it live" },
  older: { text: "This cell showed a newer chat since, which the kernel still has.", button: "Show the newer chat" },
  olderOther: { text: "This cell showed a newer widget since, which the kernel still has.", button: "Show the newer one" },
};

/** The one live model the latest run of cell `cellId` displayed, per the registry; null
 * when no live model names the cell, or that run displayed several. */
export function liveModelFor(cellId: string, registry: Registry | undefined): string | null {
  let latest = -1;
  let models: string[] = [];
  for (const [modelId, cells] of registry ?? []) {
    const run = cells[cellId];
    if (typeof run !== "number" || run < latest) continue;
    if (run > latest) models = [];
    latest = run;
    models.push(modelId);
  }
  return models.length === 1 ? models[0] : null;
}

/** Whether the view of `modelId` in cell `cellId` is older than `live`: both are live, and
 * an earlier run of the cell displayed it. */
export function olderThan(modelId: string, live: string, cellId: string, registry: Registry | undefined): boolean {
  const run = registry?.get(modelId)?.[cellId];
  const latest = registry?.get(live)?.[cellId];
  return typeof run === "number" && typeof latest === "number" && run < latest;
}

function registry(): Registry | undefined {
  return (globalThis as { [SHOWN_IN]?: Registry })[SHOWN_IN];
}

/** Put the line at the top of `host` (once); the button calls `onClick`. */
function offer(host: Element, words: { text: string; button: string }, onClick: () => void): void {
  const standing = host.querySelector(`:scope > .${REATTACH_CLASS}`);
  if (standing?.firstElementChild?.textContent === words.text) return;
  standing?.remove();
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
  host.prepend(line);
}

function withdraw(child: Element): void {
  for (const line of child.querySelectorAll(`.${REATTACH_CLASS}`)) line.remove();
}

/** Point the widget output shown by `viewNode` (an output area child) at the cell's live
 * widget. */
function reattach(cell: CodeCell, viewNode: HTMLElement): void {
  const index = cell.outputArea.widgets.findIndex((widget) => widget.node === viewNode);
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

/** Offer (or withdraw) the newer widget in every cell of `panel` that shows a saved form
 * alone or an older view; returns how many offers stand. */
export function offerLiveChats(panel: NotebookPanel): number {
  const known = registry();
  let offers = 0;
  for (const widget of panel.content.widgets) {
    if (widget.model.type !== "code") continue;
    const cell = widget as CodeCell;
    const area = cell.outputArea;
    const outputs = cell.model.outputs;
    const cellId = cell.model.id;
    const live = liveModelFor(cellId, known);
    for (let index = 0; index + 1 < outputs.length && index + 1 < area.widgets.length; index++) {
      const viewNode = area.widgets[index].node;
      const formNode = area.widgets[index + 1].node;
      const shown = viewModelId(outputs.get(index).data);
      if (shown === null) continue; // no widget view: nothing is offered around it
      const followed = isStaticForm(outputs.get(index + 1).data);
      const alone = followed && viewNode.classList.contains(HIDDEN_ERROR_CLASS);
      const older = followed && !alone && live !== null && olderThan(shown, live, cellId, known);
      // A chat's form says so (what the line calls it), drawn or not.
      const chat = followed && JSON.stringify(outputs.get(index + 1).data["text/html"]).includes(CHAT_FORM);
      const form = formNode.querySelector(`.${STATIC_FORM}`)?.parentElement;
      const view = viewNode.querySelector(`:scope > .${OUTPUT}`);
      if (alone && live !== null && live !== shown && form) {
        offers++;
        const words = chat ? REATTACH_WORDS.savedChat : REATTACH_WORDS.saved;
        offer(form, words, () => reattach(cell, viewNode));
      } else withdraw(formNode);
      if (older && view) {
        offers++;
        const words = chat ? REATTACH_WORDS.older : REATTACH_WORDS.olderOther;
        offer(view, words, () => reattach(cell, viewNode));
      } else withdraw(viewNode);
    }
  }
  return offers;
}

/** Whether a change in the notebook's DOM may change an offer: an output area child
 * shown or hidden, an output or a static form drawn (not our own line, nor the many
 * changes inside a live view), or a line of ours taken away. The widget manager's
 * renderer empties its output node whenever it draws the view there (`textContent = ""`,
 * after the model came, and again when it draws anew once the kernel's models are
 * restored): a line offered above the view before that is gone, and is offered again. */
function matters(record: MutationRecord): boolean {
  if (record.type === "attributes") return (record.target as Element).classList?.contains(OUTPUT_CHILD) ?? false;
  if ([...record.removedNodes].some((node) => node instanceof Element && node.classList.contains(REATTACH_CLASS))) return true;
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
