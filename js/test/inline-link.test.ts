// The page's end of inline completion: a request's answer streams in by id, ends once
// (done or error), a cancelled request tells the kernel and drops its late messages, a
// closed link ends every answer; a cell's error reaches the kernel as plain text.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Kernel } from "@jupyterlab/services";
import { cellError, KernelLink, subshellReady } from "../labextension/src/inline-link";

function link(): { link: KernelLink; sent: Record<string, unknown>[] } {
  const sent: Record<string, unknown>[] = [];
  const comm = { isDisposed: false, send: (data: Record<string, unknown>) => sent.push(data) } as unknown as Kernel.IComm;
  return { link: new KernelLink(comm, { debounce_ms: 0, max_tokens: 8, markdown: false, model: "m" }), sent };
}

test("an answer streams in and ends once", async () => {
  const { link: l, sent } = link();
  const answer = l.ask("a", { prefix: 'df["re' });
  assert.deepEqual(sent, [{ kind: "complete", id: "a", prefix: 'df["re' }]);
  const changed = answer.changed();
  l.receive({ kind: "chunk", id: "a", text: "ven" });
  await changed;
  l.receive({ kind: "chunk", id: "a", text: 'ue"]' });
  l.receive({ kind: "done", id: "a" });
  l.receive({ kind: "chunk", id: "a", text: "late" });
  assert.equal(answer.text, 'venue"]');
  assert.ok(answer.done && answer.error === null);
});

test("a cancelled request tells the kernel and drops what comes after", async () => {
  const { link: l, sent } = link();
  const answer = l.ask("a", { prefix: "x" });
  const changed = answer.changed();
  l.cancel("a");
  await changed;
  l.receive({ kind: "chunk", id: "a", text: "stale" });
  assert.equal(answer.text, "");
  assert.ok(answer.cancelled);
  assert.deepEqual(sent.at(-1), { kind: "cancel", id: "a" });
});

test("an error ends the answer with its message; a closed link ends them all", async () => {
  const { link: l } = link();
  const failed = l.ask("a", { prefix: "x" });
  l.receive({ kind: "error", id: "a", message: "the server is down" });
  assert.ok(failed.done);
  assert.equal(failed.error, "the server is down");
  const waiting = l.ask("b", { prefix: "y" });
  const changed = waiting.changed();
  l.close();
  await changed;
  assert.ok(waiting.cancelled);
});

test("a cell's error is its name, value and the traceback's last lines, without colours", () => {
  const traceback = ["\u001b[31mKeyError\u001b[0m Traceback", ...Array.from({ length: 10 }, (_, i) => `line ${i}`)];
  const outputs = [
    { type: "stream", toJSON: () => ({ text: "hi" }) },
    { type: "error", toJSON: () => ({ ename: "KeyError", evalue: "'x'", traceback }) },
  ];
  const text = cellError({ length: outputs.length, get: (i: number) => outputs[i] });
  assert.equal(text, ["KeyError: 'x'", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9"].join("\n"));
  assert.equal(cellError({ length: 0, get: () => outputs[0] }), "");
});

test("a request waits for the comm's subshell where the kernel has subshells", async () => {
  let start: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    start = resolve;
  });
  let ready = false;
  const waiting = subshellReady({ info: Promise.resolve(), supportsSubshells: true }, { subshellStarted: started, commsOverSubshells: "perCommTarget" }, 10_000).then(() => {
    ready = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(ready, false);
  start();
  await waiting;
  assert.equal(ready, true);
});

test("without subshells, or with comms kept off them, a request goes at once", async () => {
  const never = new Promise<void>(() => {});
  const at = Date.now();
  await subshellReady({ info: Promise.resolve(), supportsSubshells: false }, { subshellStarted: never, commsOverSubshells: "perCommTarget" }, 10_000);
  await subshellReady({ info: Promise.resolve(), supportsSubshells: true }, { subshellStarted: never, commsOverSubshells: "disabled" }, 10_000);
  await subshellReady({ info: Promise.resolve(), supportsSubshells: true }, {}, 10_000);
  assert.ok(Date.now() - at < 1000);
});

test("a subshell that never starts holds a request back no longer than the bound", async () => {
  const at = Date.now();
  await subshellReady({ info: Promise.resolve(), supportsSubshells: true }, { subshellStarted: new Promise<void>(() => {}) }, 50);
  assert.ok(Date.now() - at >= 45);
});
