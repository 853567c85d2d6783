// The chat view's notebook relay: a request reaches the page once, as a neta-nb-notebook
// event from the view's root; its reply goes back as `notebook_reply` (again when the
// acknowledgement is late); a repeated id never runs twice; other views' requests and a page
// without the extension are handled.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AnyModel } from "@anywidget/types";
import {
  NOTEBOOK_BRIDGE_EVENT,
  type NotebookBridgeDetail,
  type NotebookBridgeReply,
  REMEMBERED_REQUESTS,
  relayNotebookRequests,
} from "../src/chat/notebook-bridge";

type Handler = (message: unknown) => void;
type Sent = Record<string, unknown>;

/** The part of an anywidget model the relay uses. Replies to `notebook_reply` requests are
 * acknowledged at once unless `acknowledge` says otherwise. */
class FakeModel {
  readonly handlers = new Set<Handler>();
  readonly lifecycle = new Set<Handler>();
  readonly sent: Sent[] = [];
  acknowledge: (message: Sent) => boolean = () => true;

  on(event: string, handler: Handler): void {
    (event === "msg:custom" ? this.handlers : this.lifecycle).add(handler);
  }

  off(event: string, handler: Handler): void {
    (event === "msg:custom" ? this.handlers : this.lifecycle).delete(handler);
  }

  get(): unknown {
    return undefined;
  }

  send(message: Sent): void {
    this.sent.push(message);
    if (message.kind === "notebook_reply" && this.acknowledge(message)) {
      queueMicrotask(() => this.receive({ kind: "reply", id: message.id, ok: true, result: {} }));
    }
  }

  receive(message: unknown): void {
    for (const handler of [...this.handlers]) handler(message);
  }

  /** The `notebook_reply` payloads sent so far, without their own request ids. */
  replies(): Sent[] {
    return this.sent
      .filter((message) => message.kind === "notebook_reply")
      .map(({ id: _id, kind: _kind, ...payload }) => payload);
  }
}

/** Stands in for the page: an event target whose listener plays the extension. */
class FakePage extends EventTarget {
  readonly seen: NotebookBridgeDetail[] = [];
  isConnected = true;

  /** Answers each event with `answer(detail)`, at once or when the test says. */
  handleWith(answer: (detail: NotebookBridgeDetail) => NotebookBridgeReply | null): void {
    this.addEventListener(NOTEBOOK_BRIDGE_EVENT, (event) => {
      const detail = (event as CustomEvent<NotebookBridgeDetail>).detail;
      assert.equal(event.bubbles, true);
      assert.equal(event.composed, true);
      detail.handled = true;
      this.seen.push(detail);
      const reply = answer(detail);
      if (reply) detail.respond(reply);
    });
  }
}

const settled = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function relay(options: { attempts?: number; ackTimeoutMs?: number } = {}) {
  const model = new FakeModel();
  const page = new FakePage();
  const stop = relayNotebookRequests(model as unknown as AnyModel<Record<string, unknown>>, {
    viewId: "view-a",
    root: page,
    ...options,
  });
  const ask = (id: string, op = "read", args: Record<string, unknown> = {}, viewId = "view-a") =>
    model.receive({ kind: "notebook_request", id, view_id: viewId, op, args });
  return { model, page, stop, ask };
}

test("a request reaches the page as an event and its reply goes to the kernel", async () => {
  const { model, page, ask } = relay();
  page.handleWith((detail) => ({ ok: true, result: { op: detail.op, args: detail.args } }));
  ask("r1", "edit", { cell_id: "c1", source: "x = 2", expected: "x = 1" });
  await settled();
  assert.equal(page.seen.length, 1);
  assert.deepEqual(model.replies(), [
    { request_id: "r1", ok: true, result: { op: "edit", args: { cell_id: "c1", source: "x = 2", expected: "x = 1" } } },
  ]);
});

test("a request for another view, or another kind of message, is ignored", async () => {
  const { model, page, ask } = relay();
  page.handleWith(() => ({ ok: true, result: null }));
  ask("r1", "read", {}, "view-b");
  model.receive({ kind: "batch", seq: 1, ops: [] });
  model.receive({ kind: "notebook_request", view_id: "view-a" }); // no id, no op
  model.receive(null);
  await settled();
  assert.equal(page.seen.length, 0);
  assert.deepEqual(model.sent, []);
});

test("nobody handling the event is a no_bridge error", async () => {
  const { model, ask } = relay();
  ask("r1", "read");
  await settled();
  assert.deepEqual(model.replies(), [
    {
      request_id: "r1",
      ok: false,
      error: { code: "no_bridge", message: "needs a JupyterLab or Notebook 7 page with the neta-nb extension" },
    },
  ]);
});

test("a view off the page answers not_on_page without dispatching", async () => {
  const { model, page, ask } = relay();
  page.handleWith(() => ({ ok: true, result: null }));
  page.isConnected = false;
  ask("r1");
  await settled();
  assert.equal(page.seen.length, 0);
  assert.equal((model.replies()[0].error as { code: string }).code, "not_on_page");
});

test("a repeat while running is ignored; after the end it gets the same reply, not a second run", async () => {
  const { model, page, ask } = relay({ attempts: 1, ackTimeoutMs: 20 });
  model.acknowledge = () => false; // the reply is lost on its way
  let finishRun: (() => void) | undefined;
  page.handleWith((detail) => {
    finishRun = () => detail.respond({ ok: true, result: { execution_count: 7 } });
    return null; // still running
  });
  ask("r1", "run", { cell_id: "c1" });
  ask("r1", "run", { cell_id: "c1" });
  await settled();
  assert.equal(page.seen.length, 1);
  assert.deepEqual(model.replies(), []);
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    finishRun?.();
    await new Promise((resolve) => setTimeout(resolve, 60)); // its acknowledgement never came
  } finally {
    console.warn = warn;
  }
  ask("r1", "run", { cell_id: "c1" });
  await settled();
  assert.equal(page.seen.length, 1);
  const reply = { request_id: "r1", ok: true, result: { execution_count: 7 } };
  assert.deepEqual(model.replies(), [reply, reply]);
});

test("once the kernel has a reply the view keeps no copy of it: a late repeat is neither run nor answered", async () => {
  // A read's reply holds the whole notebook, outputs and all; the view remembers 200 ids,
  // and kept every reply whole (a notebook of 20 MB read 200 times: 4 GB in the tab).
  const { model, page, ask } = relay();
  page.handleWith(() => ({ ok: true, result: { cells: ["…many MB…"] } }));
  ask("r1");
  await settled();
  await settled(); // acknowledged
  ask("r1"); // sent by the kernel before the reply reached it
  await settled();
  assert.equal(page.seen.length, 1);
  assert.equal(model.replies().length, 1);
});

test("a handler answering twice sends one reply", async () => {
  const { model, page, ask } = relay();
  page.handleWith((detail) => {
    detail.respond({ ok: true, result: 1 });
    return { ok: true, result: 2 };
  });
  ask("r1");
  await settled();
  assert.deepEqual(model.replies(), [{ request_id: "r1", ok: true, result: 1 }]);
});

test("a malformed answer becomes a failed error", async () => {
  const { model, page, ask } = relay();
  page.handleWith(() => ({ ok: false }) as NotebookBridgeReply);
  ask("r1");
  await settled();
  assert.deepEqual(model.replies(), [
    { request_id: "r1", ok: false, error: { code: "failed", message: "the notebook operation failed" } },
  ]);
});

test("a reply whose acknowledgement times out is sent again, up to the attempts", async () => {
  const { model, page, ask } = relay({ attempts: 3, ackTimeoutMs: 20 });
  page.handleWith(() => ({ ok: true, result: "done" }));
  let lost = 2;
  model.acknowledge = () => lost-- <= 0; // the first two acknowledgements never come
  ask("r1");
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.deepEqual(
    model.replies().map((reply) => reply.request_id),
    ["r1", "r1", "r1"],
  );
  assert.equal(page.seen.length, 1);
});

test("a reply the kernel refuses is not sent again", async () => {
  const { model, page, ask } = relay({ attempts: 3, ackTimeoutMs: 20 });
  page.handleWith(() => ({ ok: true, result: "done" }));
  model.acknowledge = (message) => {
    queueMicrotask(() => model.receive({ kind: "reply", id: message.id, ok: false, error: "unknown request" }));
    return false;
  };
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    ask("r1");
    await new Promise((resolve) => setTimeout(resolve, 80));
  } finally {
    console.warn = warn;
  }
  assert.equal(model.replies().length, 1);
});

test("the view remembers the last ids only, and never forgets one still running", async () => {
  const { model, page, ask } = relay();
  const pending: (() => void)[] = [];
  page.handleWith((detail) => {
    if (detail.op === "run") {
      pending.push(() => detail.respond({ ok: true, result: "ran" }));
      return null;
    }
    return { ok: true, result: detail.op };
  });
  ask("slow", "run");
  for (let i = 0; i < REMEMBERED_REQUESTS + 10; i++) ask(`r${i}`);
  await settled();
  ask("slow", "run"); // still running: remembered, ignored
  ask("r0"); // forgotten: runs again
  ask(`r${REMEMBERED_REQUESTS + 9}`); // remembered: same reply, no run
  await settled();
  assert.equal(page.seen.filter((d) => d.op === "run").length, 1);
  assert.equal(page.seen.length, 1 + REMEMBERED_REQUESTS + 10 + 1);
  pending[0]();
  await settled();
  assert.equal(model.replies().filter((r) => r.request_id === "slow").length, 1);
});

test("after cleanup no request is handled", async () => {
  const { model, page, stop, ask } = relay();
  page.handleWith(() => ({ ok: true, result: null }));
  stop();
  ask("r1");
  await settled();
  assert.equal(page.seen.length, 0);
  assert.deepEqual(model.sent, []);
});

test("a repeat while the reply is on its way sends nothing more: a large reply is not sent again and again", async () => {
  // The kernel asks again every 2 s until the reply arrives; a notebook of many MB takes
  // longer than that to upload, and each repeat used to start another upload of it.
  const { model, page, ask } = relay({ attempts: 3, ackTimeoutMs: 10_000 });
  page.handleWith(() => ({ ok: true, result: { cells: ["…many MB…"] } }));
  model.acknowledge = () => false; // the reply is still on its way
  ask("r1");
  await settled();
  ask("r1");
  ask("r1");
  await settled();
  assert.equal(model.replies().length, 1);
  assert.equal(page.seen.length, 1);
  const sent = model.sent.find((message) => message.kind === "notebook_reply");
  model.receive({ kind: "reply", id: sent?.id, ok: true, result: {} }); // it arrived
  await settled();
  ask("r1"); // a repeat sent before the kernel had it: the kernel has it now
  await settled();
  assert.equal(model.replies().length, 1);
  assert.equal(page.seen.length, 1);
});
