/**
 * Following a kernel stream that arrives as numbered batches (`{kind, seq, ...}`, at most
 * one per frame interval — see neta_nb/widgets/streaming.py).
 *
 * Batches apply in order. A view that sees a gap in the numbering (the Jupyter server
 * drops messages under load), or that opens while a stream runs, asks the kernel for a
 * snapshot and continues from the number it carries: batches up to it are in the snapshot,
 * and the kernel sends in order. A view drawn while a stream runs first tries what its
 * model received before it listened (`replay`), and asks for a snapshot only when that
 * does not join up. Between streams the traits are the whole state, and the
 * binding says so with `continueFrom(seq)`.
 */
import type { AnyModel } from "@anywidget/types";
import { request } from "./anywidget-binding";

type Model = AnyModel<Record<string, unknown>>;

export interface Batch {
  kind: string;
  seq: number;
}

export interface NumberedBatches<B extends Batch = Batch> {
  /** The traits hold everything up to batch `seq`: go on from there (ignored while a
   * snapshot is being fetched, which brings its own number). */
  continueFrom(seq: number): void;
  /** Fetch a snapshot and go on from it (a batch could not be applied). */
  resync(): void;
  /**
   * The traits hold everything up to batch `seq`, and `received` are batches the model
   * got meanwhile (before this view listened; ./received-batches.ts): apply those after
   * `seq` in order and go on from the last. False, with nothing applied, when they do
   * not join up with `seq`, or `seq` is -1 (the traits lack the stream's start): then
   * `resync()`.
   */
  replay(seq: number, received: readonly B[]): boolean;
  readonly resyncing: boolean;
  dispose(): void;
}

export function followNumberedBatches<B extends Batch, S extends { seq: number }>(
  model: Model,
  options: {
    /** The `kind` of the batch messages. */
    kind: B["kind"];
    /** The request kind that returns a snapshot. */
    snapshot: string;
    applyBatch: (batch: B) => void;
    applySnapshot: (snapshot: S) => void;
  },
): NumberedBatches<B> {
  let seq: number | null = null;
  let resyncing = false;
  let disposed = false;

  const resync = () => {
    if (resyncing || disposed) return;
    resyncing = true;
    seq = null;
    request<S>(model, options.snapshot)
      .then((snapshot) => {
        if (disposed) return;
        seq = snapshot.seq;
        options.applySnapshot(snapshot);
      })
      .catch(() => undefined) // no kernel (a saved notebook): the traits are all there is
      .finally(() => {
        resyncing = false;
      });
  };

  const onMessage = (message: unknown) => {
    const batch = message as B;
    if (!batch || batch.kind !== options.kind) return;
    if (seq === null) {
      if (!resyncing) resync();
      return;
    }
    if (batch.seq <= seq) return;
    if (batch.seq !== seq + 1) {
      resync();
      return;
    }
    seq = batch.seq;
    options.applyBatch(batch);
  };
  model.on("msg:custom", onMessage);

  return {
    continueFrom(next: number) {
      if (!resyncing) seq = next;
    },
    resync,
    replay(from: number, received: readonly B[]) {
      if (from < 0) return false; // the traits lack the running stream's start
      const after = received.filter((batch) => batch.seq > from);
      if (after.some((batch, index) => batch.seq !== from + index + 1)) return false;
      seq = from;
      for (const batch of after) {
        if (seq === null) break; // a batch asked for a snapshot: it brings the rest
        seq = batch.seq;
        options.applyBatch(batch);
      }
      return true;
    },
    get resyncing() {
      return resyncing;
    },
    dispose() {
      disposed = true;
      model.off("msg:custom", onMessage);
    },
  };
}
