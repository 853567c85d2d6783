// The `@` mention parser finds what the kernel's finds: the same vectors as
// tests/runtime/mentions/test_mentions.py (tests/fixtures/mention_vectors.json), and the mention
// being typed at the caret, for the popup.
import assert from "node:assert/strict";
import { test } from "node:test";
import shared from "../../tests/fixtures/mention_vectors.json";
import { findMentions, mentionAtCaret, typedMentionEnd } from "../src/chat/mention-parse";

for (const vector of shared.vectors) {
  test(`shared vector: ${vector.why}`, () => {
    const found = findMentions(vector.text).map((m) => ({
      kind: m.kind,
      target: m.target,
      name: m.name,
      typed: vector.text.slice(m.start, m.end),
    }));
    assert.deepEqual(found, vector.mentions);
  });
}

test("offsets are the textarea's, past characters outside the BMP", () => {
  const text = "🧪 @df";
  const [mention] = findMentions(text);
  assert.equal(mention.start, 3); // the emoji is two UTF-16 units
  assert.equal(text.slice(mention.start, mention.end), "@df");
});

test("the mention being typed at the caret", () => {
  assert.deepEqual(mentionAtCaret("look at @sa", 11), { start: 8, prefix: "sa" });
  assert.deepEqual(mentionAtCaret("@", 1), { start: 0, prefix: "" });
  assert.deepEqual(mentionAtCaret("(@In[1", 6), { start: 1, prefix: "In[1" });
  assert.deepEqual(mentionAtCaret("@file:data/sa", 13), { start: 0, prefix: "file:data/sa" });
  assert.deepEqual(mentionAtCaret('@file:"my fo', 12), { start: 0, prefix: 'file:"my fo' });
  assert.equal(mentionAtCaret("mail a@b", 8), null); // inside a word
  assert.equal(mentionAtCaret("@df more", 8), null); // the caret has left it
  assert.equal(mentionAtCaret("x `@pro", 7), null); // after a backtick
  assert.equal(mentionAtCaret("x ` @pro`", 8), null); // inside a code span
  assert.deepEqual(mentionAtCaret("x ` @pro", 8), { start: 4, prefix: "pro" }); // not closed
  assert.equal(mentionAtCaret("@@x", 3), null);
  assert.deepEqual(mentionAtCaret("line\n@x", 7), { start: 5, prefix: "x" });
});

test("a choice replaces the rest of the word the caret is in", () => {
  assert.equal(typedMentionEnd("@sa|les now".replace("|", ""), 3), 6);
  assert.equal(typedMentionEnd("@sa, now", 3), 3);
});
