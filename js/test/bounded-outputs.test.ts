// Outputs as the notebook extension sends them for `read` and `run`: long text keeps its
// head and tail, a huge image is named instead of cut, and past the notebook's budget an
// output is one line saying so.
import assert from "node:assert/strict";
import { test } from "node:test";
import { boundOutput, IMAGE_CHARS, newBudget, TEXT_CHARS, TOTAL_CHARS } from "../labextension/src/bounded-outputs";

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
