// Token formatting and the context dot's level, against the cases the Python widget is
// checked with too (tests/fixtures/token_format.json): both sides must show the same text.
import assert from "node:assert/strict";
import { test } from "node:test";
import cases from "../../tests/fixtures/token_format.json";
import {
  contextLevel,
  type ContextUsage,
  formatContextShare,
  formatReported,
  formatTokens,
  reportedShare,
  type TurnUsage,
} from "../src/cards/token-stats";

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

test("unknown and estimated figures: each shared case as the Python widget shows it", () => {
  for (const [usage, upText, downText] of cases.reported_figures as [Partial<TurnUsage>, string, string][]) {
    const current = { total_tokens: 0, ...usage } as TurnUsage;
    const reported = reportedShare(current);
    assert.equal(`↑${formatReported(current.input_tokens, reported)}`, upText, JSON.stringify(usage));
    assert.equal(`↓${formatReported(current.output_tokens, reported)}`, downText, JSON.stringify(usage));
  }
  for (const [context, expected] of cases.context_share as [Partial<ContextUsage>, string][]) {
    const full = { used_tokens: 0, max_tokens: 0, ...context } as ContextUsage;
    assert.equal(formatContextShare(full), expected, JSON.stringify(context));
  }
});
