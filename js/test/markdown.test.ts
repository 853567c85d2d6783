// The stable boundary of streamed markdown: blocks before it never change when text is
// appended, so the chat view and the thinking block render them once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { healedTail, stableBoundary } from "../src/markdown";

test("nothing is stable before a blank line ends a block", () => {
  assert.equal(stableBoundary("", 0), 0);
  assert.equal(stableBoundary("one line, still growing", 0), 0);
  assert.equal(stableBoundary("one line\n", 0), 0);
  assert.equal(stableBoundary("one line\nand another\n", 0), 0);
});

test("a blank line after a block makes everything up to it stable", () => {
  const text = "First paragraph.\n\nSecond, still grow";
  assert.equal(stableBoundary(text, 0), "First paragraph.\n\n".length);
  const two = "a\n\nb\n\nc";
  assert.equal(stableBoundary(two, 0), "a\n\nb\n\n".length);
});

test("several blank lines: the boundary is after the first one", () => {
  assert.equal(stableBoundary("a\n\n\n\nb", 0), "a\n\n".length);
});

test("a blank line inside a code fence is not a boundary", () => {
  const open = "```python\nx = 1\n\ny = 2\n";
  assert.equal(stableBoundary(open, 0), 0);
  const closed = `${open}\`\`\`\n\nafter`;
  assert.equal(stableBoundary(closed, 0), closed.length - "after".length);
  const tilde = "~~~\na\n\nb\n~~~\n\nz";
  assert.equal(stableBoundary(tilde, 0), tilde.length - 1);
  const indented = "   ```\na\n\nb\n";
  assert.equal(stableBoundary(indented, 0), 0);
});

test("the search starts at `start` and never returns less", () => {
  const text = "a\n\nb\n\nc\n\nd";
  const first = stableBoundary(text, 0);
  assert.equal(stableBoundary(text, first), text.length - 1);
  assert.equal(stableBoundary("a\n\nb", 3), 3);
  // A blank line right at `start` belongs to blocks already rendered.
  assert.equal(stableBoundary("a\n\n\nb", 3), 3);
});

test("streaming: the boundary of a prefix never passes that of the whole text", () => {
  const text = "# Title\n\nIntro with `code`.\n\n```js\nlet a;\n\nlet b;\n```\n\n- one\n- two\n\nEnd.";
  const final = stableBoundary(text, 0);
  let previous = 0;
  for (let end = 0; end <= text.length; end += 1) {
    const boundary = stableBoundary(text.slice(0, end), 0);
    assert.ok(boundary >= previous, `the boundary moved back at ${end}`);
    assert.ok(boundary <= final, `prefix ${end} claims more than the whole text`);
    // Incremental: continuing from the last boundary finds the same one.
    assert.equal(stableBoundary(text.slice(0, end), previous), boundary);
    previous = boundary;
  }
  assert.equal(final, text.length - "End.".length);
});

test("a streaming tail closes what it opened, as the whole text will", () => {
  assert.equal(healedTail("Missing values: **customer_rat"), "Missing values: **customer_rat**");
  assert.equal(healedTail("Use `df.dropna"), "Use `df.dropna`");
  assert.equal(healedTail("- item ~~old"), "- item ~~old~~");
  assert.equal(healedTail("Done: *almost"), "Done: *almost*");
  // Nothing that would render unlike the whole text: no placeholder URL, no early image.
  assert.equal(healedTail("See [the docs](http://127.0.0.1:9/pa"), "See the docs");
  assert.equal(healedTail("A chart: ![chart](http://127.0.0.1:9/x.pn").trim(), "A chart:");
  assert.equal(healedTail("A chart: ![cha").trim(), "A chart:");
  assert.equal(healedTail("![a](data:image/png;base64,AA) done"), "![a](data:image/png;base64,AA) done");
  assert.equal(healedTail("- > 25 rows"), "- > 25 rows");
  assert.equal(healedTail("costs $5 and $6"), "costs $5 and $6");
  // Closed markup and code fences are left as they are.
  assert.equal(healedTail("**bold** and `code`"), "**bold** and `code`");
  assert.equal(healedTail("```python\nx = '**'"), "```python\nx = '**'");
});

test("a marker with nothing after it yet is held back until its first character", () => {
  assert.equal(healedTail("the old advice is ~~"), "the old advice is ");
  assert.equal(healedTail("Missing values: **"), "Missing values: ");
  assert.equal(healedTail("run `"), "run ");
  assert.equal(healedTail("the ~"), "the ");
  assert.equal(healedTail("* "), "");
  // A closing marker, a list bullet with its text, and code inside a fence stay.
  assert.equal(healedTail("**bold**"), "**bold**");
  assert.equal(healedTail("* item"), "* item");
  assert.equal(healedTail("```python\nx = a *"), "```python\nx = a *");
});
