// What the user typed into a pending proposal's editor, kept across redraws of its card:
// found by the request and the proposal's texts, bounded, gone once decided.
import assert from "node:assert/strict";
import { test } from "node:test";
import { draftKey, ProposalDrafts, REMEMBERED_DRAFTS } from "../src/cards/proposal-drafts";

test("a draft is found again by its request and texts, and by nothing else", () => {
  const drafts = new ProposalDrafts();
  const key = draftKey("call_0", ["d1"], "c1", "x = 0", "x = 1");
  drafts.get(key).text = "x = 1  # mine";
  assert.equal(drafts.get(draftKey("call_0", ["d1"], "c1", "x = 0", "x = 1")).text, "x = 1  # mine");
  // The same call id elsewhere: another sub-agent, or another session's proposal.
  assert.equal(drafts.get(draftKey("call_0", ["d2"], "c1", "x = 0", "x = 1")).text, undefined);
  assert.equal(drafts.get(draftKey("call_0", ["d1"], "c1", "x = 0", "x = 2")).text, undefined);
  assert.equal(drafts.get(draftKey("call_0", [], "c1", "x = 0", "x = 1")).text, undefined);
  drafts.forget(key);
  assert.equal(drafts.get(key).text, undefined);
});

test("the newest drafts are kept", () => {
  const drafts = new ProposalDrafts();
  for (let i = 0; i < REMEMBERED_DRAFTS + 20; i++) drafts.get(draftKey(`c${i}`, [], "c", "", `${i}`)).text = `${i}`;
  assert.equal(drafts.size, REMEMBERED_DRAFTS);
  assert.equal(drafts.get(draftKey("c0", [], "c", "", "0")).text, undefined);
  const last = REMEMBERED_DRAFTS + 19;
  assert.equal(drafts.get(draftKey(`c${last}`, [], "c", "", `${last}`)).text, `${last}`);
});
