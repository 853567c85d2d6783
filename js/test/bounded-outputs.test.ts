// Outputs as the notebook extension sends them for `read` and `run`: long text keeps its
// head and tail, a huge image is named instead of cut, and past the notebook's budget an
// output is one line saying so.
import assert from "node:assert/strict";
import { test } from "node:test";
import { boundOutput, chargeOrder, IMAGE_CHARS, newBudget, TEXT_CHARS, TOTAL_CHARS } from "../labextension/src/bounded-outputs";

test("short outputs pass unchanged", () => {
  const output = { output_type: "execute_result", data: { "text/plain": "42" }, execution_count: 3, metadata: {} };
  assert.deepEqual(boundOutput(output, newBudget()), output);
});

test("long text keeps its head and tail and says what was left out", () => {
  const text = `${"a".repeat(TEXT_CHARS)}${"b".repeat(TEXT_CHARS)}`;
  const bounded = boundOutput({ output_type: "stream", name: "stdout", text: [text.slice(0, 10), text.slice(10)] }, newBudget());
  const cut = bounded.text as string;
  assert.ok(cut.length < TEXT_CHARS + 100);
  assert.ok(cut.startsWith("a".repeat(100)) && cut.endsWith("b".repeat(100)));
  assert.match(cut, /\[100,000 characters left out by the page\]/);
  const html = boundOutput({ output_type: "display_data", data: { "text/html": text }, metadata: {} }, newBudget());
  assert.ok(((html.data as Record<string, string>)["text/html"]).length < TEXT_CHARS + 100);
});

test("a huge image is named, not cut; a small one is sent whole", () => {
  const small = "iVBOR".repeat(1_000);
  const huge = "A".repeat(IMAGE_CHARS + 4);
  const bounded = boundOutput({ output_type: "display_data", data: { "image/png": huge, "text/plain": "<Figure>" }, metadata: {} }, newBudget());
  assert.deepEqual(bounded.data, { "text/plain": "<Figure>\n[image/png, 1,465 KB: left out by the page]" });
  const kept = boundOutput({ output_type: "display_data", data: { "image/png": small }, metadata: {} }, newBudget());
  assert.equal((kept.data as Record<string, string>)["image/png"], small);
});

test("past the notebook's budget each output is one line", () => {
  const budget = newBudget();
  const chunk = { output_type: "stream", name: "stdout", text: "x".repeat(TEXT_CHARS) };
  let sent = 0;
  for (let i = 0; i < TOTAL_CHARS / TEXT_CHARS + 5; i++) sent += JSON.stringify(boundOutput(chunk, budget)).length;
  assert.ok(sent < TOTAL_CHARS + 2 * TEXT_CHARS, String(sent));
  assert.match(boundOutput(chunk, budget).text as string, /left out by the page/);
});

test("a cut never splits a surrogate pair", () => {
  const face = "😀"; // two UTF-16 units
  for (const shift of [0, 1]) {
    const value = "a".repeat(TEXT_CHARS / 2 - 1 + shift) + face.repeat(TEXT_CHARS);
    const cut = boundOutput({ output_type: "stream", name: "stdout", text: value }, newBudget()).text as string;
    assert.doesNotThrow(() => encodeURIComponent(cut)); // throws on a lone surrogate
  }
});

test("JSON values are never joined or cut as text: small ones pass, large ones are named", () => {
  const small = { output_type: "display_data", data: { "application/json": ["a", "b"] }, metadata: {} };
  assert.deepEqual(boundOutput(small, newBudget()), small);
  const plot = { data: [{ y: Array.from({ length: 30_000 }, (_, i) => i) }] };
  const large = boundOutput({ output_type: "display_data", data: { "application/vnd.plotly.v1+json": plot, "text/plain": "<Figure>" }, metadata: {} }, newBudget());
  assert.deepEqual(Object.keys(large.data as object), ["text/plain"]);
  assert.match((large.data as Record<string, string>)["text/plain"], /^<Figure>\n\[application\/vnd\.plotly\.v1\+json, \d+ KB: left out by the page\]$/);
});

test("an error keeps its name, a bounded value and its last frames; past the budget it stays an error", () => {
  const error = { output_type: "error", ename: "ValueError", evalue: "v".repeat(50_000), traceback: Array.from({ length: 500 }, (_, i) => `frame ${i}`) };
  const bounded = boundOutput(error, newBudget());
  assert.equal(bounded.ename, "ValueError");
  assert.ok((bounded.evalue as string).length < 10_100);
  assert.deepEqual((bounded.traceback as string[]).slice(-1), ["frame 499"]);
  assert.equal((bounded.traceback as string[]).length, 100);
  const spent = { left: 10 };
  const late = boundOutput(error, spent);
  assert.equal(late.output_type, "error");
  assert.equal(late.ename, "ValueError");
  assert.match(late.evalue as string, /left out by the page/);
  // One output larger than what is left does not overshoot the budget either.
  const next = boundOutput({ output_type: "stream", name: "stdout", text: "short" }, spent);
  assert.match(next.text as string, /left out by the page/);
});

test("a read charges the cells it asks for first, then the others in document order", () => {
  const ids = ["a", "b", "c", "d", "e"];
  assert.deepEqual(chargeOrder(ids, {}), [0, 1, 2, 3, 4]);
  assert.deepEqual(chargeOrder(ids, { start: 1, end: null, cell_id: null }), [0, 1, 2, 3, 4]);
  assert.deepEqual(chargeOrder(ids, { cell_id: "d", start: 1 }), [3, 0, 1, 2, 4]);
  assert.deepEqual(chargeOrder(ids, { start: 4 }), [3, 4, 0, 1, 2]);
  assert.deepEqual(chargeOrder(ids, { start: 2, end: 3 }), [1, 2, 0, 3, 4]);
  // As read_notebook reads them: a start below 1 is 1; an unknown id or an empty range
  // leaves document order.
  assert.deepEqual(chargeOrder(ids, { start: -5, end: 1 }), [0, 1, 2, 3, 4]);
  assert.deepEqual(chargeOrder(ids, { cell_id: "zz" }), [0, 1, 2, 3, 4]);
  assert.deepEqual(chargeOrder(ids, { start: 9 }), [0, 1, 2, 3, 4]);
  assert.deepEqual(chargeOrder(ids, { start: "2" }), [0, 1, 2, 3, 4]);
});
