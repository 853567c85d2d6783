// A preview's length counted as the kernel counts its `*_chars` (Python code points), so
// the note under a preview of emoji or other astral characters states the right numbers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { characterCount } from "../src/cut-text";

test("a preview's characters are counted as Python counts them", () => {
  assert.equal(characterCount(""), 0);
  assert.equal(characterCount("plain ascii"), 11);
  assert.equal(characterCount("数据分析"), 4); // CJK: one unit each in both
  assert.equal(characterCount("a🧪b"), 3); // one code point, two UTF-16 units
  assert.equal(characterCount("🧪".repeat(20_000)), 20_000);
  assert.equal(characterCount("👨‍👩‍👧"), 5); // three emoji joined by two ZWJ: five code points
  // Lone surrogates are one code point each in Python too.
  assert.equal(characterCount("\ud83e"), 1);
  assert.equal(characterCount("x\udc00\ud83e"), 3);
});
