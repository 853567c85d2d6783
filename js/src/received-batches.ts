/**
 * The numbered batches a widget model received before (or while) its views were drawn.
 *
 * A chat view drawn while its turn already streams — Run All draws the chat's output after
 * the next cell started the turn — used to ask the kernel for a snapshot, although its
 * model had received every batch of the turn: the page paid for the turn's text twice. The
 * loader (./loader.ts, the `_esm` of every widget, which anywidget binds to the model as
 * soon as the model exists) listens to the model's custom messages from its first moment
 * and keeps the batches here, under the model's `_key` trait; a view drawn later applies
 * them after the traits and goes on from the last one (`NumberedBatches.replay`). It asks
 * for a snapshot only when they do not join up with the traits (a model created mid-turn,
 * a batch the server dropped, more than `MAX_KEPT` kept).
 *
 * What is kept is the current turn's: between turns the traits are the whole state, so the
 * record is emptied when `running` turns false (and when the model shows another session).
 * It lives in a registry on `globalThis` because the loader and the shared bundle are two
 * modules (the same reason as the bundle registry in ./loader.ts).
 */

/** Batches kept for one model at most; past that the record is dropped (a view drawn then
 * asks for a snapshot, which is bounded). ~4,000 characters of text per batch at most. */
export const MAX_KEPT = 1_000;

interface NumberedMessage {
  kind: string;
  seq: number;
}

export interface Received {
  /** Batches in the order they came (by kind; a chat's are `batch`). */
  messages: NumberedMessage[];
  /** Not all of the turn's batches are here (too many were dropped, or the model came
   * mid-turn): they do not join up with the traits. */
  incomplete: boolean;
}

interface ModelEvents {
  get(name: string): unknown;
  on(name: string, callback: (...args: never[]) => void): void;
  off(name: string, callback: (...args: never[]) => void): void;
}

const REGISTRY = Symbol.for("neta_nb.received_batches");

function registry(): Map<string, Received> {
  const global = globalThis as { [REGISTRY]?: Map<string, Received> };
  global[REGISTRY] ??= new Map();
  return global[REGISTRY];
}

function isNumbered(message: unknown): message is NumberedMessage {
  const candidate = message as Partial<NumberedMessage> | null;
  return typeof candidate?.kind === "string" && typeof candidate.seq === "number";
}

/**
 * Keep what `model` receives, from now on, under its `_key`; returns the function that stops
 * (and forgets). A model without a `_key` (every widget but the chat) keeps nothing.
 */
export function recordReceived(model: ModelEvents): () => void {
  const key = model.get("_key");
  if (typeof key !== "string" || !key) return () => undefined;
  // A model created while a turn runs holds the turn's start in no trait (a stream's live
  // response is sent only in batches and snapshots): its views need a snapshot until the
  // turn ends.
  const received: Received = { messages: [], incomplete: model.get("running") === true };
  registry().set(key, received);
  const onMessage = (message: unknown) => {
    if (!isNumbered(message)) return;
    if (received.messages.length >= MAX_KEPT) {
      received.messages = [];
      received.incomplete = true;
    }
    if (!received.incomplete) received.messages.push(message);
  };
  // Between turns the traits are the whole state: what came before is in them.
  const forget = () => {
    received.messages = [];
    received.incomplete = false;
  };
  const onRunning = () => {
    if (!model.get("running")) forget();
  };
  model.on("msg:custom", onMessage);
  model.on("change:running", onRunning);
  model.on("change:session_id", forget);
  return () => {
    model.off("msg:custom", onMessage);
    model.off("change:running", onRunning);
    model.off("change:session_id", forget);
    if (registry().get(key) === received) registry().delete(key);
  };
}

/** The batches of `kind` the model named `key` received (in order), or `null` when they
 * cannot be trusted to be all of them (nothing recorded, or some dropped). */
export function receivedBatches<B extends { kind: string; seq: number }>(key: unknown, kind: string): B[] | null {
  if (typeof key !== "string" || !key) return null;
  const received = registry().get(key);
  if (!received || received.incomplete) return null;
  return received.messages.filter((message) => message.kind === kind) as unknown as B[];
}
