// A proposed notebook edit: what is a well-formed proposal, and how each diff line is
// drawn (the kernel's difflib output, drawn as text).
import assert from "node:assert/strict";
import { test } from "node:test";
import { diffLineKind, parseProposal } from "../src/cards/cell-edit-card";

const proposal = { kind: "edit", cell_id: "c2", before: "a\n", after: "b\n", diff: ["--- cell c2", "+++ cell c2", "@@ -1 +1 @@", "-a", "+b"], decision: "accepted" };

test("a proposal is read from JSON text or an object, and a malformed one is refused", () => {
  assert.deepEqual(parseProposal(JSON.stringify(proposal)), proposal);
  assert.deepEqual(parseProposal(proposal), proposal);
  assert.equal(parseProposal("{not json"), null);
  assert.equal(parseProposal({ ...proposal, kind: "delete" }), null);
  assert.equal(parseProposal({ ...proposal, diff: "-a" }), null);
  assert.equal(parseProposal({ ...proposal, before: 3 }), null);
  assert.equal(parseProposal(null), null);
});

test("diff lines: headers, hunks, additions, deletions and context", () => {
  assert.deepEqual(
    proposal.diff.map(diffLineKind),
    ["meta", "meta", "hunk", "del", "add"],
  );
  assert.equal(diffLineKind(" unchanged"), "same");
  assert.equal(diffLineKind("+<img src=x onerror=alert(1)>"), "add"); // drawn as text anyway
});
