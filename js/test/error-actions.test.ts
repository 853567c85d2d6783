// The chat view's side of Fix and Explain: a `neta-nb-error-action` event from the page
// becomes one `error_action` request to the kernel, and its outcome (or the kernel's refusal)
// goes back through `respond`; an event already handled, or not one of ours, is left
// alone; the view marks its element while it answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AnyModel } from "@anywidget/types";
import { ERROR_ACTION_EVENT, type ErrorActionDetail, type ErrorActionReply, relayErrorActions } from "../src/chat/error-actions";

type Handler = (message: unknown) => void;
type Sent = Record<string, unknown>;

/** The part of an anywidget model the relay uses; each request is answered by `answer`. */
class FakeModel {
  readonly handlers = new Set<Handler>();
  readonly sent: Sent[] = [];
  answer: (message: Sent) => Sent = () => ({ ok: true, result: { running: true } });

  on(event: string, handler: Handler): void {
    if (event === "msg:custom") this.handlers.add(handler);
  }

  off(_event: string, handler: Handler): void {
    this.handlers.delete(handler);
  }

  get(): unknown {
    return undefined;
  }

  send(message: Sent): void {
    this.sent.push(message);
    queueMicrotask(() => {
      for (const handler of [...this.handlers]) handler({ kind: "reply", id: message.id, ...this.answer(message) });
    });
  }
}

class FakeRoot extends EventTarget {
  readonly dataset: Record<string, string> = {};
}

const REQUEST = {
  action: "fix" as const,
  cell_id: "divide",
  execution_count: 2,
  source: "1 / 0",
  error: { ename: "ZeroDivisionError", evalue: "division by zero", traceback: [] },
};

function press(root: FakeRoot, handled = false): { detail: ErrorActionDetail; reply: Promise<ErrorActionReply> } {
  let resolve: (reply: ErrorActionReply) => void = () => undefined;
  const reply = new Promise<ErrorActionReply>((r) => {
    resolve = r;
  });
  const detail: ErrorActionDetail = { request: { ...REQUEST }, respond: resolve, handled };
  root.dispatchEvent(new CustomEvent(ERROR_ACTION_EVENT, { detail }));
  return { detail, reply };
}

test("a press is one error_action request, and its outcome is the reply", async () => {
  const model = new FakeModel();
  const root = new FakeRoot();
  const stop = relayErrorActions(model as unknown as AnyModel<Record<string, unknown>>, root as unknown as HTMLElement);
  assert.equal(root.dataset.netaNbErrorActions, "");
  const { detail, reply } = press(root);
  assert.equal(detail.handled, true);
  assert.deepEqual(await reply, { ok: true });
  assert.equal(model.sent.length, 1);
  const { id: _id, kind, ...payload } = model.sent[0];
  assert.equal(kind, "error_action");
  assert.deepEqual(payload, REQUEST);

  model.answer = () => ({ ok: false, error: "The chat is answering: wait for its turn to end (or stop it), then press again." });
  assert.deepEqual(await press(root).reply, {
    ok: false,
    message: "The chat is answering: wait for its turn to end (or stop it), then press again.",
  });
  stop();
  assert.equal("netaNbErrorActions" in root.dataset, false);
  // Stopped: a press is not handled (the page says no chat answered).
  const after = press(root);
  assert.equal(after.detail.handled, false);
  assert.equal(model.sent.length, 2);
});

test("an event another view handled, or not shaped as a press, is left alone", async () => {
  const model = new FakeModel();
  const root = new FakeRoot();
  const stop = relayErrorActions(model as unknown as AnyModel<Record<string, unknown>>, root as unknown as HTMLElement);
  press(root, true);
  root.dispatchEvent(new CustomEvent(ERROR_ACTION_EVENT, { detail: { request: null, handled: false } }));
  root.dispatchEvent(new CustomEvent(ERROR_ACTION_EVENT, { detail: "fix" }));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(model.sent.length, 0);
  stop();
});
