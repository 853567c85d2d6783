// A proposed notebook edit: what is a well-formed proposal, and how each diff line is
// drawn (the kernel's difflib output, drawn as text).
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseProposal, undoRequest } from "../src/cards/cell-edit-card";
import { diffLineKind } from "../src/diff-lines";

const proposal = { kind: "edit", cell_id: "c2", before: "a\n", after: "b\n", diff: ["--- cell c2", "+++ cell c2", "@@ -1 +1 @@", "-a", "+b"], decision: "accepted" };

test("a proposal is read from JSON text or an object, and a malformed one is refused", () => {
  assert.deepEqual(parseProposal(JSON.stringify(proposal)), proposal);
  assert.deepEqual(parseProposal(proposal), proposal);
  assert.equal(parseProposal("{not json"), null);
  assert.equal(parseProposal({ ...proposal, kind: "rename" }), null);
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

test("a deletion and a move are proposals too; a move's Undo moves the cell back", () => {
  const deletion = { ...proposal, kind: "delete", after: "", diff: ["-a"], cell_label: "[3]", position: 3 };
  assert.deepEqual(parseProposal(JSON.stringify(deletion)), deletion);
  const move = { ...proposal, kind: "move", before: "a\n", after: "a\n", diff: [" a"], from_index: 4, to_index: 1 };
  assert.deepEqual(parseProposal(move), move);
  // Back from position 1 to 4, made only while the cell is where the move put it (the
  // page's indexes count from 0).
  assert.deepEqual(undoRequest(move as Parameters<typeof undoRequest>[0]), [
    "move",
    { cell_id: "c2", expected: "a\n", from_index: 0, to_index: 3 },
  ]);
  assert.deepEqual(undoRequest(proposal as Parameters<typeof undoRequest>[0]), ["undo", { cell_id: "c2", before: "a\n", after: "b\n" }]);
});
