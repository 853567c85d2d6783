// Token formatting and the context dot's level, against the cases the Python widget is
// checked with too (tests/fixtures/token_format.json): both sides must show the same text.
import assert from "node:assert/strict";
import { test } from "node:test";
import cases from "../../tests/fixtures/token_format.json";
import { contextLevel, formatTokens } from "../src/token-stats";

test("formatTokens shows each shared case as the Python widget does", () => {
  for (const [value, expected] of cases.format_tokens as [number, string][]) {
    assert.equal(formatTokens(value), expected, `formatTokens(${value})`);
  }
});

test("formatTokens treats non-numbers as zero", () => {
  assert.equal(formatTokens(Number.NaN), "0");
  assert.equal(formatTokens(undefined as unknown as number), "0");
});

test("contextLevel: green up to 50 %, yellow up to 80 %, red above", () => {
  for (const [percent, expected] of cases.context_level as [number, string][]) {
    assert.equal(contextLevel(percent), expected, `contextLevel(${percent})`);
  }
});
