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
