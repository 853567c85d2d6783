/**
 * neta-nb-notebook-bridge: lets a chat view on a JupyterLab or Notebook 7 page read and
 * edit the notebook that holds it (protocol: ./protocol.ts; operations: ./ops.ts), open
 * the chat in a side panel (./side-panel.ts), shows a saved neta_nb widget's static
 * form alone where the widget's model is gone (./missing-widgets.ts), and keeps static
 * forms current on a page that reloaded while the kernel ran (./static-forms.ts), where it
 * offers the live chat in place of a saved one (./reattach.ts), and offers Fix and Explain
 * on a cell's error in a notebook that shows a live chat (./error-actions.ts), and tells
 * the chat views which cell is active, for their context chip and `@this` (./cell-focus.ts).
 * A second plugin offers inline completion from a kernel that switched it on
 * (./inline-completion.ts).
 *
 * Active, it marks the page (`document.body.dataset.netaNbNotebookBridge = version`,
 * `netaNbSidePanel` likewise) and answers `neta-nb-notebook` events dispatched from inside
 * a notebook panel or a side panel opened from one (for that notebook), and
 * `neta-nb-side-panel` events. Nothing it does throws into JupyterLab: every failure is a
 * reply.
 */
import { ISessionContextDialogs } from "@jupyterlab/apputils";
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookCellExecutor, INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { followCellFocus } from "./cell-focus";
import { chatIn, followErrorOutputs } from "./error-actions";
import { inlineCompletionPlugin } from "./inline-completion";
import { hideMissingWidgetErrors } from "./missing-widgets";
import { OPS, type OpServices } from "./ops";
import {
  BRIDGE_EVENT,
  BRIDGE_VERSION,
  BridgeFailure,
  type BridgeReply,
  type BridgeRequestDetail,
  SIDE_PANEL_EVENT,
  type SidePanelRequestDetail,
} from "./protocol";
import { followLiveChats } from "./reattach";
import { SidePanels } from "./side-panel";
import { followStaticForms } from "./static-forms";

function isRequest(detail: unknown): detail is BridgeRequestDetail {
  const d = detail as Partial<BridgeRequestDetail> | null;
  return typeof d === "object" && d !== null && typeof d.op === "string" && typeof d.respond === "function";
}

function failure(error: unknown): BridgeReply {
  if (error instanceof BridgeFailure) return { ok: false, error: { code: error.code, message: error.message } };
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { ok: false, error: { code: "failed", message } };
}

/** Calls the sender's `respond` once; a sender that throws does not reach JupyterLab. */
function answer(event: string, name: string, respond: ((reply: BridgeReply) => void) | undefined, reply: BridgeReply): void {
  try {
    respond?.(reply);
  } catch (error) {
    console.warn(`${event}: the reply to '${name}' could not be delivered`, error);
  }
}

/** The notebook panel holding `target`: the notebook's own DOM, or a side panel opened
 * from it (its view's requests are that notebook's). */
function panelHolding(tracker: INotebookTracker, sides: SidePanels, target: EventTarget | null): NotebookPanel | null {
  if (!(target instanceof Node)) return null;
  const panel = tracker.find((panel) => !panel.isDisposed && panel.node.contains(target)) ?? null;
  if (panel) return panel;
  const opener = sides.notebookHolding(target);
  return opener && !opener.isDisposed ? opener : null;
}

async function perform(
  tracker: INotebookTracker,
  sides: SidePanels,
  services: OpServices,
  detail: BridgeRequestDetail,
  target: EventTarget | null,
): Promise<BridgeReply> {
  const op = Object.hasOwn(OPS, detail.op) ? OPS[detail.op] : undefined;
  if (!op) return { ok: false, error: { code: "unknown_op", message: `unknown notebook operation '${detail.op}'` } };
  const panel = panelHolding(tracker, sides, target);
  if (!panel) return { ok: false, error: { code: "no_notebook", message: "the chat is not inside an open notebook" } };
  await panel.context.ready;
  const args = typeof detail.args === "object" && detail.args !== null ? detail.args : {};
  return { ok: true, result: await op(panel, args, services, target) };
}

function isSideRequest(detail: unknown): detail is SidePanelRequestDetail {
  const d = detail as Partial<SidePanelRequestDetail> | null;
  return typeof d === "object" && d !== null && typeof d.action === "string";
}

async function sideAction(
  tracker: INotebookTracker,
  sides: SidePanels,
  detail: SidePanelRequestDetail,
  target: EventTarget | null,
): Promise<BridgeReply> {
  if (!(target instanceof Node)) return { ok: false, error: { code: "no_notebook", message: "the chat is not on the page" } };
  if (detail.action === "open") {
    const notebook = tracker.find((panel) => !panel.isDisposed && panel.node.contains(target)) ?? null;
    const modelId = typeof detail.model_id === "string" && detail.model_id ? detail.model_id : null;
    return { ok: true, result: await sides.open(target, notebook, modelId) };
  }
  if (detail.action === "reveal") {
    if (!sides.revealHolding(target)) return { ok: false, error: { code: "no_notebook", message: "the chat is not in a side panel" } };
    return { ok: true, result: null };
  }
  if (detail.action === "show") {
    // A view whose cell the notebook's windowing has taken out of the page: the event
    // comes from the document, naming the view's element.
    const element = detail.element instanceof Node ? detail.element : target;
    const notebook = tracker.find((panel) => !panel.isDisposed && panel.isVisible && panel.content.widgets.some((cell) => cell.node.contains(element)));
    if (!notebook) return { ok: false, error: { code: "no_notebook", message: "the chat is in no notebook on screen" } };
    const index = notebook.content.widgets.findIndex((cell) => cell.node.contains(element));
    await notebook.content.scrollToItem(index, "start");
    return { ok: true, result: { index } };
  }
  return { ok: false, error: { code: "unknown_op", message: `unknown side panel action '${detail.action}'` } };
}

function activate(
  app: JupyterFrontEnd,
  tracker: INotebookTracker | null,
  executor: INotebookCellExecutor | null,
  sessionDialogs: ISessionContextDialogs | null,
): void {
  if (!tracker) return; // a page without notebooks (Notebook 7's file browser)
  const services: OpServices = {
    executor,
    sessionDialogs,
    tracker,
    contents: app.serviceManager.contents,
    openFile: (path) => app.commands.execute("docmanager:open", { path }),
  };
  const sides = new SidePanels(app);
  document.addEventListener(BRIDGE_EVENT, (event: Event) => {
    const detail = (event as CustomEvent<unknown>).detail;
    // Another copy of this extension (installed twice) has it already: one answer only.
    if (!isRequest(detail) || detail.handled) return;
    detail.handled = true;
    const target = event.target;
    perform(tracker, sides, services, detail, target).then(
      (reply) => answer(BRIDGE_EVENT, detail.op, detail.respond, reply),
      (error: unknown) => answer(BRIDGE_EVENT, detail.op, detail.respond, failure(error)),
    );
  });
  document.addEventListener(SIDE_PANEL_EVENT, (event: Event) => {
    const detail = (event as CustomEvent<unknown>).detail;
    if (!isSideRequest(detail) || detail.handled) return;
    detail.handled = true;
    sideAction(tracker, sides, detail, event.target).then(
      (reply) => answer(SIDE_PANEL_EVENT, detail.action, detail.respond, reply),
      (error: unknown) => answer(SIDE_PANEL_EVENT, detail.action, detail.respond, failure(error)),
    );
  });
  const watch = (panel: NotebookPanel) => {
    hideMissingWidgetErrors(panel);
    followStaticForms(panel);
    followLiveChats(panel);
    followErrorOutputs(panel, (notebook) => chatIn(notebook, sides.nodesOf(notebook)));
    followCellFocus(panel, () => sides.nodesOf(panel));
  };
  tracker.widgetAdded.connect((_, panel) => watch(panel));
  tracker.forEach(watch);
  document.body.dataset.netaNbNotebookBridge = BRIDGE_VERSION;
  document.body.dataset.netaNbSidePanel = BRIDGE_VERSION;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: "neta-nb-notebook-bridge:plugin",
  description:
    "Lets a neta_nb chat view read and edit the notebook that holds it and open in a side panel; shows a saved widget's static form where its model is gone.",
  autoStart: true,
  optional: [INotebookTracker, INotebookCellExecutor, ISessionContextDialogs],
  activate,
};

export default [plugin, inlineCompletionPlugin];
