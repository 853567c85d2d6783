// When a branch was made, as its row in the session list says it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { madeAt } from "../src/chat/session-sidebar";

test("today the clock, another day the date too, in either language", () => {
  const now = new Date(2026, 11, 7, 18, 0);
  const today = new Date(2026, 11, 7, 9, 5).getTime() / 1000;
  const before = new Date(2026, 11, 5, 14, 2).getTime() / 1000;
  assert.equal(madeAt(today, "en", now), "09:05");
  assert.equal(madeAt(before, "en", now), "Dec 5 14:02");
  assert.equal(madeAt(before, "zh-CN", now), "12月5日 14:02");
});

test("no time says nothing", () => {
  assert.equal(madeAt(0, "en"), "");
  assert.equal(madeAt(Number.NaN, "en"), "");
  assert.equal(madeAt(undefined as unknown as number, "en"), "");
});
