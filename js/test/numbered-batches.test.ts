// The numbered-batch follower: batches apply in order, a gap or a view opened mid-stream
// fetches a snapshot and goes on from its number, and nothing applies after dispose.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AnyModel } from "@anywidget/types";
import { followNumberedBatches } from "../src/numbered-batches";

type Handler = (message: unknown) => void;

interface Batch {
  kind: "batch";
  seq: number;
  text: string;
}

interface Snapshot {
  seq: number;
  text: string;
}

/** The part of an anywidget model the follower uses: custom messages both ways, and the
 * lifecycle events a request listens to (it rejects when the kernel goes away). */
class FakeModel {
  readonly handlers = new Set<Handler>();
  readonly lifecycle = new Set<Handler>();
  readonly sent: Record<string, unknown>[] = [];

  private listeners(event: string): Set<Handler> {
    if (event === "msg:custom") return this.handlers;
    assert.ok(event === "comm_live_update" || event === "destroy", `unexpected event ${event}`);
    return this.lifecycle;
  }

  get(trait: string): unknown {
    return trait === "lang" ? "en" : undefined;
  }

  on(event: string, handler: Handler): void {
    this.listeners(event).add(handler);
  }

  off(event: string, handler: Handler): void {
    this.listeners(event).delete(handler);
  }

  send(message: Record<string, unknown>): void {
    this.sent.push(message);
  }

  receive(message: unknown): void {
    for (const handler of [...this.handlers]) handler(message);
  }

  /** The snapshot requests sent so far. */
  requests(): Record<string, unknown>[] {
    return this.sent.filter((message) => message.kind === "sync");
  }

  async reply(request: Record<string, unknown>, result: Snapshot | null, error?: string): Promise<void> {
    this.receive({ kind: "reply", id: request.id, ok: error === undefined, result, error });
    await settled();
  }
}

/** Lets the follower's promise chain (then/catch/finally) run to its end. */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

function follow() {
  const model = new FakeModel();
  const applied: string[] = [];
  const stream = followNumberedBatches<Batch, Snapshot>(model as unknown as AnyModel<Record<string, unknown>>, {
    kind: "batch",
    snapshot: "sync",
    applyBatch: (batch) => applied.push(`batch ${batch.seq}:${batch.text}`),
    applySnapshot: (snapshot) => applied.push(`snapshot ${snapshot.seq}:${snapshot.text}`),
  });
  const batch = (seq: number, text = `t${seq}`) => model.receive({ kind: "batch", seq, text });
  return { model, applied, stream, batch };
}

test("batches after continueFrom apply in order; old and repeated ones are ignored", () => {
  const { model, applied, stream, batch } = follow();
  stream.continueFrom(2);
  batch(1);
  batch(2);
  batch(3);
  batch(3);
  batch(4);
  assert.deepEqual(applied, ["batch 3:t3", "batch 4:t4"]);
  assert.deepEqual(model.requests(), []);
});

test("messages of another kind are not batches", () => {
  const { model, applied, stream } = follow();
  stream.continueFrom(0);
  model.receive({ kind: "reply", id: "x", ok: true });
  model.receive(null);
  model.receive({ kind: "other", seq: 1 });
  assert.deepEqual(applied, []);
  assert.deepEqual(model.requests(), []);
});

test("a gap fetches one snapshot and continues from the number it carries", async () => {
  const { model, applied, stream, batch } = follow();
  stream.continueFrom(0);
  batch(1);
  batch(3); // batch 2 was lost
  assert.equal(stream.resyncing, true);
  batch(4); // arrives while the snapshot is on its way: in the snapshot, not applied
  stream.continueFrom(9); // the traits' number is ignored while resyncing
  assert.equal(model.requests().length, 1);
  await model.reply(model.requests()[0], { seq: 4, text: "t1t2t3t4" });
  assert.equal(stream.resyncing, false);
  batch(4);
  batch(5);
  assert.deepEqual(applied, ["batch 1:t1", "snapshot 4:t1t2t3t4", "batch 5:t5"]);
});

test("a view that opens mid-stream starts from a snapshot", async () => {
  const { model, applied, batch } = follow();
  batch(7);
  batch(8);
  assert.equal(model.requests().length, 1);
  await model.reply(model.requests()[0], { seq: 8, text: "…" });
  batch(9);
  assert.deepEqual(applied, ["snapshot 8:…", "batch 9:t9"]);
});

test("a failed snapshot (no kernel) leaves the view able to try again", async () => {
  const { model, applied, stream, batch } = follow();
  stream.resync();
  await model.reply(model.requests()[0], null, "no kernel");
  assert.equal(stream.resyncing, false);
  batch(3);
  assert.equal(model.requests().length, 2);
  await model.reply(model.requests()[1], { seq: 3, text: "abc" });
  assert.deepEqual(applied, ["snapshot 3:abc"]);
});

test("after dispose nothing applies, not even a snapshot already requested", async () => {
  const { model, applied, stream, batch } = follow();
  stream.resync();
  const [request] = model.requests();
  stream.dispose();
  model.receive({ kind: "reply", id: request.id, ok: true, result: { seq: 1, text: "late" } });
  await settled();
  batch(2);
  stream.resync();
  assert.deepEqual(applied, []);
  assert.equal(model.requests().length, 1);
});

test("a view drawn mid-stream applies what its model received and asks for no snapshot", () => {
  const { model, applied, stream, batch } = follow();
  // The traits hold up to batch 3; the model received 2 (already in them) to 5 before.
  const received = [2, 3, 4, 5].map((seq) => ({ kind: "batch" as const, seq, text: `t${seq}` }));
  assert.equal(stream.replay(3, received), true);
  assert.deepEqual(applied, ["batch 4:t4", "batch 5:t5"]);
  batch(5); // the loader's copy and the live message may overlap: applied once
  batch(6);
  assert.deepEqual(applied, ["batch 4:t4", "batch 5:t5", "batch 6:t6"]);
  assert.deepEqual(model.requests(), []);
});

test("received batches that do not join up with the traits are not applied", () => {
  const { applied, stream } = follow();
  const gap = [4, 6].map((seq) => ({ kind: "batch" as const, seq, text: `t${seq}` }));
  assert.equal(stream.replay(3, gap), false);
  const late = [5, 6].map((seq) => ({ kind: "batch" as const, seq, text: `t${seq}` }));
  assert.equal(stream.replay(3, late), false); // a model created after batch 4 went
  assert.deepEqual(applied, []);
  assert.equal(stream.replay(3, []), true); // nothing came yet: go on from the traits
  // -1: the traits lack the stream's start (bound mid-turn): never from them.
  assert.equal(stream.replay(-1, []), false);
});

test("a received batch that asks for a snapshot stops the replay there", async () => {
  const model = new FakeModel();
  const applied: string[] = [];
  const stream = followNumberedBatches<Batch, Snapshot>(model as unknown as AnyModel<Record<string, unknown>>, {
    kind: "batch",
    snapshot: "sync",
    applyBatch: (batch) => {
      if (batch.text === "unknown card") stream.resync();
      else applied.push(`batch ${batch.seq}`);
    },
    applySnapshot: (snapshot) => applied.push(`snapshot ${snapshot.seq}`),
  });
  const received = [1, 2, 3].map((seq) => ({ kind: "batch" as const, seq, text: seq === 2 ? "unknown card" : "" }));
  assert.equal(stream.replay(0, received), true);
  assert.deepEqual(applied, ["batch 1"]);
  const [request] = model.requests();
  await model.reply(request, { seq: 3, text: "" });
  assert.deepEqual(applied, ["batch 1", "snapshot 3"]);
});
