/**
 * The page-side protocol of the notebook bridge: a chat view (or anything on the page)
 * dispatches a `CustomEvent` named `neta-nb-notebook` from one of its elements, with
 *
 *     detail = { op, args, respond(reply), handled: false }
 *
 * The extension sets `detail.handled = true` while the event is dispatched (so the sender
 * knows, right after `dispatchEvent`, whether anyone will answer), finds the notebook whose
 * DOM holds the event's target, performs the op on that notebook's live model and calls
 * `respond` once, later, with `{ok: true, result}` or `{ok: false, error: {code, message}}`.
 *
 * The chat view's relay (js/src/chat/notebook-bridge.ts) carries the same shapes between
 * the kernel and this event.
 */

/** The event's name. */
export const BRIDGE_EVENT = "neta-nb-notebook";

/** Set on `document.body.dataset` (`data-neta-nb-notebook-bridge`) to the version below
 * once the extension is active. */
export const BRIDGE_VERSION = "0.1.0";

export type ErrorCode =
  | "no_notebook" // the event's target is inside no notebook panel (the sender asks another view)
  | "not_open" // read of another notebook: none is open at that path
  | "exists" // create: a file is at the path already
  | "no_folder" // create: the path's folder does not exist
  | "no_cell" // no cell has that id
  | "no_file" // open_file: nothing (or a folder) at that path
  | "outside_root" // open_file: the file is not under the server's root
  | "changed" // the cell's source is not what the request expected
  | "not_code" // run / set_outputs of a markdown or raw cell
  | "bad_request" // arguments missing or of the wrong type
  | "unknown_op"
  | "failed"; // anything else: the message says what

export interface BridgeError {
  code: ErrorCode;
  message: string;
}

export type BridgeReply = { ok: true; result: unknown } | { ok: false; error: BridgeError };

export interface BridgeRequestDetail {
  op: string;
  args: Record<string, unknown>;
  respond: (reply: BridgeReply) => void;
  handled: boolean;
}

/** An error the ops throw on purpose; anything else thrown becomes `failed`. */
export class BridgeFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "BridgeFailure";
  }
}

/** The MIME type of a widget view output (the ipywidgets manager draws it). */
export const WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json";

/**
 * The side panel's event (./side-panel.ts): a chat view dispatches `neta-nb-side-panel`
 * from its own element, with
 *
 *     detail = { action, model_id?, respond(reply), handled: false }
 *
 * `action` is `"open"` (a side panel with another view of the widget model `model_id` —
 * by default the one of the output holding the event's target — or the one there is,
 * revealed), `"reveal"` (the view is in a side panel: bring it on screen, as `open`
 * does) or `"show"` (scroll the notebook on screen to the cell holding `element`, an
 * inline view its windowing has left undrawn; dispatched from `document`). The extension sets `handled` during the dispatch and calls
 * `respond` once, with `{ok: true, result: {panel_id, created}}` or an error as the
 * bridge's (`no_notebook`, `failed`, `unknown_op`). `document.body.dataset.netaNbSidePanel`
 * is set once the page offers side panels.
 */
export const SIDE_PANEL_EVENT = "neta-nb-side-panel";

export interface SidePanelRequestDetail {
  action: string;
  model_id?: unknown;
  element?: unknown;
  respond?: (reply: BridgeReply) => void;
  handled: boolean;
}
