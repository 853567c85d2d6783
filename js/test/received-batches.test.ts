// What a model received before its views were drawn: kept from the model's first moment
// under its `_key`, by kind and in order; emptied between turns; dropped (not trusted)
// past MAX_KEPT; forgotten when the loader's binding ends.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_KEPT, receivedBatches, recordReceived } from "../src/received-batches";

type Handler = (...args: never[]) => void;

class FakeModel {
  readonly handlers = new Map<string, Set<Handler>>();
  constructor(readonly traits: Record<string, unknown>) {}
  get(name: string): unknown {
    return this.traits[name];
  }
  on(name: string, handler: Handler): void {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name)?.add(handler);
  }
  off(name: string, handler: Handler): void {
    this.handlers.get(name)?.delete(handler);
  }
  emit(name: string, ...args: unknown[]): void {
    for (const handler of this.handlers.get(name) ?? []) (handler as (...a: unknown[]) => void)(...args);
  }
  set(name: string, value: unknown): void {
    this.traits[name] = value;
    this.emit(`change:${name}`);
  }
}

const seqs = (key: string, kind = "batch") => receivedBatches<{ kind: string; seq: number }>(key, kind)?.map((b) => b.seq) ?? null;

test("batches are kept in order under the model's key, by kind, until a turn ends", () => {
  const model = new FakeModel({ _key: "k1", running: false });
  const stop = recordReceived(model);
  model.set("running", true); // created idle, then a turn starts
  model.emit("msg:custom", { kind: "batch", seq: 4 });
  model.emit("msg:custom", { kind: "reply", id: "r", ok: true }); // not numbered: not kept
  model.emit("msg:custom", { kind: "child", seq: 1 });
  model.emit("msg:custom", { kind: "batch", seq: 5 });
  assert.deepEqual(seqs("k1"), [4, 5]);
  assert.deepEqual(seqs("k1", "child"), [1]);
  model.set("running", false); // the traits are the whole state again
  assert.deepEqual(seqs("k1"), []);
  model.emit("msg:custom", { kind: "batch", seq: 6 });
  model.set("session_id", "other"); // another session: everything is redrawn
  assert.deepEqual(seqs("k1"), []);
  stop();
  assert.equal(seqs("k1"), null);
  model.emit("msg:custom", { kind: "batch", seq: 7 });
  assert.equal(seqs("k1"), null);
});

test("past MAX_KEPT the record is not trusted until the turn ends", () => {
  const model = new FakeModel({ _key: "k2", running: false });
  recordReceived(model);
  model.set("running", true);
  for (let seq = 1; seq <= MAX_KEPT + 1; seq++) model.emit("msg:custom", { kind: "batch", seq });
  assert.equal(seqs("k2"), null);
  model.set("running", false);
  model.emit("msg:custom", { kind: "batch", seq: MAX_KEPT + 2 });
  assert.deepEqual(seqs("k2"), [MAX_KEPT + 2]);
});

test("a model without a key keeps nothing", () => {
  const model = new FakeModel({ running: true });
  recordReceived(model)();
  assert.equal(model.handlers.size, 0);
  assert.equal(receivedBatches("", "batch"), null);
});

test("a model created mid-turn is not trusted until its turn ends", () => {
  // Its traits lack the live response streamed before it existed.
  const model = new FakeModel({ _key: "k3", running: true });
  recordReceived(model);
  model.emit("msg:custom", { kind: "batch", seq: 8 });
  assert.equal(seqs("k3"), null);
  model.set("running", false);
  model.emit("msg:custom", { kind: "batch", seq: 9 });
  assert.deepEqual(seqs("k3"), [9]);
});
