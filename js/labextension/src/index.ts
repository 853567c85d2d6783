/**
 * neta-nb-notebook-bridge: lets a chat view on a JupyterLab or Notebook 7 page read and
 * edit the notebook that holds it (protocol: ./protocol.ts; operations: ./ops.ts).
 *
 * Active, it marks the page (`document.body.dataset.netaNbNotebookBridge = version`) and
 * answers `neta-nb-notebook` events dispatched from inside a notebook panel. Nothing it
 * does throws into JupyterLab: every failure is a reply.
 */
import { ISessionContextDialogs } from "@jupyterlab/apputils";
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookCellExecutor, INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { OPS, type OpServices } from "./ops";
import { BRIDGE_EVENT, BRIDGE_VERSION, BridgeFailure, type BridgeReply, type BridgeRequestDetail } from "./protocol";

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
function answer(detail: BridgeRequestDetail, reply: BridgeReply): void {
  try {
    detail.respond(reply);
  } catch (error) {
    console.warn(`${BRIDGE_EVENT}: the reply to '${detail.op}' could not be delivered`, error);
  }
}

function panelHolding(tracker: INotebookTracker, target: EventTarget | null): NotebookPanel | null {
  if (!(target instanceof Node)) return null;
  return tracker.find((panel) => !panel.isDisposed && panel.node.contains(target)) ?? null;
}

async function perform(tracker: INotebookTracker, services: OpServices, detail: BridgeRequestDetail, target: EventTarget | null): Promise<BridgeReply> {
  const op = Object.hasOwn(OPS, detail.op) ? OPS[detail.op] : undefined;
  if (!op) return { ok: false, error: { code: "unknown_op", message: `unknown notebook operation '${detail.op}'` } };
  const panel = panelHolding(tracker, target);
  if (!panel) return { ok: false, error: { code: "no_notebook", message: "the chat is not inside an open notebook" } };
  await panel.context.ready;
  const args = typeof detail.args === "object" && detail.args !== null ? detail.args : {};
  return { ok: true, result: await op(panel, args, services) };
}

function activate(
  _app: JupyterFrontEnd,
  tracker: INotebookTracker | null,
  executor: INotebookCellExecutor | null,
  sessionDialogs: ISessionContextDialogs | null,
): void {
  if (!tracker) return; // a page without notebooks (Notebook 7's file browser)
  const services: OpServices = { executor, sessionDialogs };
  document.addEventListener(BRIDGE_EVENT, (event: Event) => {
    const detail = (event as CustomEvent<unknown>).detail;
    // Another copy of this extension (installed twice) has it already: one answer only.
    if (!isRequest(detail) || detail.handled) return;
    detail.handled = true;
    const target = event.target;
    perform(tracker, services, detail, target).then(
      (reply) => answer(detail, reply),
      (error: unknown) => answer(detail, failure(error)),
    );
  });
  document.body.dataset.netaNbNotebookBridge = BRIDGE_VERSION;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: "neta-nb-notebook-bridge:plugin",
  description: "Lets a neta_nb chat view read and edit the notebook that holds it.",
  autoStart: true,
  optional: [INotebookTracker, INotebookCellExecutor, ISessionContextDialogs],
  activate,
};

export default plugin;
