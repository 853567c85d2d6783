/**
 * Fix and Explain on a cell's error: the chat view's side.
 *
 * The JupyterLab / Notebook 7 extension (js/labextension/src/error-actions.ts) shows the
 * buttons on a notebook's error outputs and, on a press, dispatches a `neta-nb-error-action`
 * CustomEvent from one live chat view of that notebook, with
 *
 *     detail = { request: {action, cell_id, execution_count, source, error}, respond(reply), handled: false }
 *
 * The view sets `handled` while the event is dispatched and passes the request to its
 * kernel-side chat as `error_action` (Python: neta_nb/widgets/chat/requests/error_actions.py, which
 * builds the prompt and starts the turn); `respond` gets `{ok: true}` or `{ok: false,
 * message}` (the chat refused: a turn is running, the chat is read-only). A view that
 * answers marks its element (`data-neta-nb-error-actions`) and dispatches
 * `neta-nb-error-actions-changed` on `document` when it starts and stops.
 */
import type { AnyModel } from "@anywidget/types";
import { type Cleanup, request } from "../anywidget-binding";

type Model = AnyModel<Record<string, unknown>>;

/** The event's name (the extension dispatches it). */
export const ERROR_ACTION_EVENT = "neta-nb-error-action";

/** The error output as the page shows it (Python twin: `ErrorOutput`,
 * neta_nb/widgets/chat/requests/error_actions.py). */
export interface ErrorOutput {
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

/** `error_action`: view → kernel (Python twin: `ErrorActionRequest`). */
export interface ErrorActionRequest {
  action?: "fix" | "explain";
  cell_id?: string;
  execution_count?: number | null;
  source?: string;
  error?: ErrorOutput;
}

export interface ErrorActionReply {
  ok: boolean;
  message?: string;
}

export interface ErrorActionDetail {
  request: ErrorActionRequest;
  respond: (reply: ErrorActionReply) => void;
  handled: boolean;
}

function isDetail(detail: unknown): detail is ErrorActionDetail {
  const d = detail as Partial<ErrorActionDetail> | null;
  return typeof d === "object" && d !== null && typeof d.request === "object" && d.request !== null && typeof d.respond === "function";
}

/** Dispatched on `document` when a view starts or stops answering (the extension then
 * offers the buttons, or takes them away). */
export const ERROR_ACTIONS_CHANGED = "neta-nb-error-actions-changed";

function changed(): void {
  if (typeof document !== "undefined") document.dispatchEvent(new CustomEvent(ERROR_ACTIONS_CHANGED));
}

/** Answer the page's Fix / Explain presses dispatched from inside `root` by asking the
 * kernel, and mark `root` as answering (`data-neta-nb-error-actions`); returns a cleanup
 * that stops. */
export function relayErrorActions(model: Model, root: HTMLElement): Cleanup {
  const onEvent = (event: Event) => {
    const detail = (event as CustomEvent<unknown>).detail;
    if (!isDetail(detail) || detail.handled) return;
    detail.handled = true;
    const respond = (reply: ErrorActionReply) => {
      try {
        detail.respond(reply);
      } catch (error) {
        console.warn("neta-nb: the answer to an error action could not be delivered", error);
      }
    };
    request(model, "error_action", { ...detail.request } satisfies ErrorActionRequest).then(
      () => respond({ ok: true }),
      (error: unknown) => respond({ ok: false, message: error instanceof Error ? error.message : String(error) }),
    );
  };
  root.addEventListener(ERROR_ACTION_EVENT, onEvent);
  root.dataset.netaNbErrorActions = "";
  // Rendered views are put on the page after this runs: the page looks once they are.
  changed();
  const later = setTimeout(changed, 500);
  return () => {
    clearTimeout(later);
    root.removeEventListener(ERROR_ACTION_EVENT, onEvent);
    delete root.dataset.netaNbErrorActions;
    changed();
  };
}
