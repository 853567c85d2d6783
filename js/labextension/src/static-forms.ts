/**
 * A neta_nb widget's static form is the output after its view, updated by display id
 * (neta_nb/widgets/static_form.py). JupyterLab maps a display id to its output only on the
 * page that ran the cell, with that run's request, in memory: a page reloaded while the
 * kernel ran on — or a notebook closed and opened again — drops every update, and the
 * notebook is saved with a transcript that stops where the page was reloaded.
 *
 * The form's display id also names the widget model whose view the form follows
 * (`neta-form:<model id>:<unique>`). Here every display update of the notebook's kernel is
 * heard, and one for a form goes into the output after each view of that model, unless
 * that output holds it already (the page mapped it, or it did not change): the page is
 * marked changed only when what it would save changed.
 */
import type { ICodeCellModel } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { WIDGET_VIEW_MIME } from "./protocol";

type Outputs = ICodeCellModel["outputs"];
type OutputData = ReturnType<Outputs["get"]>["data"];

/** How a static form's display id begins (Python: `FORM_DISPLAY_PREFIX`). */
export const FORM_DISPLAY_PREFIX = "neta-form:";
/** The class of a static form's root element (its `text/html` output). */
export const STATIC_FORM = "neta-static-form";

/** The parts of an IOPub message read here. */
export interface DisplayMessage {
  header: { msg_type: string };
  content: { data?: unknown; metadata?: unknown; transient?: unknown };
}

/** The widget model a static form's display id names, or null (another display). */
export function formViewModel(displayId: unknown): string | null {
  if (typeof displayId !== "string" || !displayId.startsWith(FORM_DISPLAY_PREFIX)) return null;
  const rest = displayId.slice(FORM_DISPLAY_PREFIX.length);
  const end = rest.indexOf(":");
  return end > 0 ? rest.slice(0, end) : null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether an output is a static form (its HTML's root names the class). */
export function isStaticForm(data: OutputData): boolean {
  const html = data["text/html"];
  const text = Array.isArray(html) ? html.join("") : html;
  return typeof text === "string" && text.includes(`class="${STATIC_FORM}"`);
}

/** The model id of a widget view output, or null. */
export function viewModelId(data: OutputData): string | null {
  const view = data[WIDGET_VIEW_MIME];
  return isObject(view) && typeof view.model_id === "string" ? view.model_id : null;
}

function sameData(a: OutputData, b: Record<string, unknown>): boolean {
  const keys = Object.keys(b);
  return Object.keys(a).length === keys.length && keys.every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
}

/** Write `data` into the static form after each view of `modelId` in `outputs`; returns
 * how many outputs changed. */
export function writeForm(outputs: Outputs, modelId: string, data: Record<string, unknown>, metadata: Record<string, unknown>): number {
  let written = 0;
  for (let index = 0; index + 1 < outputs.length; index++) {
    if (viewModelId(outputs.get(index).data) !== modelId) continue;
    const form = outputs.get(index + 1);
    if (form.type !== "display_data" || !isStaticForm(form.data) || sameData(form.data, data)) continue;
    outputs.set(index + 1, { output_type: "display_data", data: data as never, metadata: metadata as never });
    written++;
  }
  return written;
}

/** Route a display update of the notebook's kernel by the view its form follows. */
export function onDisplayMessage(panel: NotebookPanel, message: DisplayMessage): number {
  if (message.header.msg_type !== "update_display_data") return 0;
  const { data, metadata, transient } = message.content;
  const modelId = isObject(transient) ? formViewModel(transient.display_id) : null;
  if (!modelId || !isObject(data)) return 0;
  const cells = panel.content.model?.cells;
  if (!cells) return 0;
  let written = 0;
  for (const cell of cells) {
    if (cell.type !== "code") continue;
    written += writeForm((cell as ICodeCellModel).outputs, modelId, data, isObject(metadata) ? metadata : {});
  }
  return written;
}

/** Keep one notebook's static forms current until it closes. */
export function followStaticForms(panel: NotebookPanel): void {
  const heard = (_: unknown, message: object) => {
    try {
      onDisplayMessage(panel, message as DisplayMessage);
    } catch (error) {
      console.warn("neta-nb-notebook-bridge: a static form could not be updated", error);
    }
  };
  panel.sessionContext.iopubMessage.connect(heard);
  panel.disposed.connect(() => panel.sessionContext.iopubMessage.disconnect(heard));
}
