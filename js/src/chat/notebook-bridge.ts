/**
 * The chat view's relay between the kernel's notebook tools and the notebook on the page.
 *
 * The kernel asks with a custom message `{kind: "notebook_request", id, view_id, op, args}`
 * addressed to one rendered view (every view of the model receives it; only the view whose
 * id matches acts). The view passes it to the page as a `neta-nb-notebook` CustomEvent,
 * dispatched from its own root element, so the JupyterLab / Notebook 7 extension
 * (js/labextension) finds the notebook holding the view and answers through
 * `detail.respond`. The answer goes back to the kernel as a request of kind
 * `notebook_reply`, `{request_id, ok, result | error}`, retried when its acknowledgement
 * does not come in time (the kernel keeps the first reply for an id and ignores the rest).
 *
 * A request the kernel sends again (it got no answer) never runs twice: while it runs, the
 * repeat is ignored; once it has finished, the same reply is sent again — unless that reply
 * is still on its way (a reply of many MB takes longer to upload than the kernel waits
 * before asking again: each repeat would start another upload) or the kernel acknowledged
 * it (it has it: a repeat is one it sent before). The view remembers the last
 * `REMEMBERED_REQUESTS` ids, and keeps a reply only until the kernel acknowledged it (a
 * read's reply holds the whole notebook).
 */
import type { AnyModel } from "@anywidget/types";
import { type Cleanup, RequestFailure, request } from "../anywidget-binding";

type Model = AnyModel<Record<string, unknown>>;

/** The event the extension listens for, and the page mark it sets once active. */
export const NOTEBOOK_BRIDGE_EVENT = "neta-nb-notebook";

/** How many request ids a view remembers (to answer a repeat without running it again). */
export const REMEMBERED_REQUESTS = 200;

/** `notebook_request`: kernel → view (sent by neta_nb/widgets/chat/notebook_page.py). */
export interface NotebookRequestMessage {
  kind: "notebook_request";
  id: string;
  view_id: string;
  op: string;
  args: Record<string, unknown>;
}

export interface NotebookBridgeError {
  code: string;
  message: string;
}

/** What the page's extension answers (and what the view answers without one). */
export interface NotebookBridgeReply {
  ok: boolean;
  result?: unknown;
  error?: NotebookBridgeError;
}

/** `notebook_reply`: view → kernel, a request whose own reply is only an acknowledgement
 * (Python twin: `NotebookReply` in neta_nb/widgets/chat/wire.py). */
export interface NotebookReply extends NotebookBridgeReply {
  request_id: string;
}

/** The event's `detail`: the extension sets `handled` while the event is dispatched. */
export interface NotebookBridgeDetail {
  op: string;
  args: Record<string, unknown>;
  respond: (reply: NotebookBridgeReply) => void;
  handled: boolean;
}

export const NO_BRIDGE_REPLY: NotebookBridgeReply = {
  ok: false,
  error: { code: "no_bridge", message: "needs a JupyterLab or Notebook 7 page with the neta-nb extension" },
};

/** An event dispatched from an element off the page reaches no listener on `document`. */
export const NOT_ON_PAGE_REPLY: NotebookBridgeReply = {
  ok: false,
  error: {
    code: "not_on_page",
    message: "the chat view is not on the page now (closed, or scrolled out of a notebook that detaches cells out of view)",
  },
};

/** Whether the page has the extension (it marks `<body>` when it activates). */
export function notebookBridgePresent(): boolean {
  return typeof document !== "undefined" && document.body?.dataset.netaNbNotebookBridge !== undefined;
}

export interface NotebookRelayOptions {
  /** This view's id (the one its `view_opened` announced). */
  viewId: string;
  /** Where the event is dispatched from: the view's root element, inside the notebook. */
  root: Pick<EventTarget, "dispatchEvent"> & { readonly isConnected?: boolean };
  /** Milliseconds to wait for the kernel's acknowledgement of a reply (default 10 s). */
  ackTimeoutMs?: number;
  /** How many times a reply is sent when its acknowledgement times out (default 3). */
  attempts?: number;
}

function isNotebookRequest(message: unknown): message is NotebookRequestMessage {
  const m = message as Partial<NotebookRequestMessage> | null;
  return typeof m === "object" && m !== null && m.kind === "notebook_request" && typeof m.id === "string" && typeof m.op === "string";
}

/** The extension's answer as the kernel reads it, whatever a handler passed. */
function normalize(reply: unknown): NotebookBridgeReply {
  const r = reply as Partial<NotebookBridgeReply> | null;
  if (typeof r !== "object" || r === null) {
    return { ok: false, error: { code: "failed", message: "the notebook extension answered nothing" } };
  }
  if (r.ok === true) return { ok: true, result: r.result ?? null };
  const error = r.error;
  return {
    ok: false,
    error: {
      code: typeof error?.code === "string" ? error.code : "failed",
      message: typeof error?.message === "string" ? error.message : "the notebook operation failed",
    },
  };
}

/**
 * Relay the kernel's notebook requests addressed to this view to the page, and their
 * replies back. Returns a cleanup that stops listening; replies to requests already on
 * their way are still sent (what they did to the notebook is done).
 */
export function relayNotebookRequests(model: Model, options: NotebookRelayOptions): Cleanup {
  const { viewId, root } = options;
  const attempts = Math.max(1, options.attempts ?? 3);
  /** id → "running", the reply it finished with, or "delivered" once the kernel
   * acknowledged that reply; oldest first. */
  const seen = new Map<string, "running" | "delivered" | NotebookBridgeReply>();
  /** Ids whose reply is on its way to the kernel (not acknowledged yet). */
  const sending = new Set<string>();

  const forgetOld = () => {
    for (const [id, state] of seen) {
      if (seen.size <= REMEMBERED_REQUESTS) break;
      if (state !== "running") seen.delete(id);
    }
  };

  const sendReply = async (requestId: string, reply: NotebookBridgeReply) => {
    if (sending.has(requestId)) return; // on its way: its own retries cover a lost one
    sending.add(requestId);
    const payload = { request_id: requestId, ...reply } satisfies NotebookReply;
    try {
      for (let attempt = 1; attempt <= attempts; attempt++) {
        try {
          await request(model, "notebook_reply", { ...payload }, { timeout: options.ackTimeoutMs });
          if (seen.has(requestId)) seen.set(requestId, "delivered"); // no copy kept
          return;
        } catch (error) {
          // Only a lost acknowledgement is worth another try: an error reply is the kernel's
          // answer, and a kernel that went away takes the request with it.
          if (!(error instanceof RequestFailure && error.reason === "timeout") || attempt === attempts) {
            console.warn(`neta-nb: the reply to notebook request ${requestId} did not reach the kernel`, error);
            return;
          }
        }
      }
    } finally {
      sending.delete(requestId);
    }
  };

  const finish = (requestId: string, reply: NotebookBridgeReply) => {
    if (seen.get(requestId) !== "running") return; // answered already: one reply per request
    seen.set(requestId, reply);
    forgetOld();
    void sendReply(requestId, reply);
  };

  const onMessage = (message: unknown) => {
    if (!isNotebookRequest(message) || message.view_id !== viewId) return;
    const id = message.id;
    const state = seen.get(id);
    if (state === "running" || state === "delivered") return;
    if (state !== undefined) {
      void sendReply(id, state);
      return;
    }
    seen.set(id, "running");
    if (root.isConnected === false) {
      finish(id, NOT_ON_PAGE_REPLY);
      return;
    }
    const detail: NotebookBridgeDetail = {
      op: message.op,
      args: typeof message.args === "object" && message.args !== null ? message.args : {},
      respond: (reply) => finish(id, normalize(reply)),
      handled: false,
    };
    try {
      root.dispatchEvent(new CustomEvent(NOTEBOOK_BRIDGE_EVENT, { detail, bubbles: true, composed: true }));
    } catch (error) {
      // A listener that throws does not stop the others; this is a failure to dispatch.
      finish(id, normalize({ ok: false, error: { code: "failed", message: String(error) } }));
      return;
    }
    if (!detail.handled) finish(id, NO_BRIDGE_REPLY);
  };

  model.on("msg:custom", onMessage);
  return () => model.off("msg:custom", onMessage);
}
