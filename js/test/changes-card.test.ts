// The Changes card's logic: which pending approvals form one set, how its changes are
// counted, and when (and what) its decisions are sent.
import assert from "node:assert/strict";
import { test } from "node:test";
import { answers, arrangeApprovals, ChangeDecisions, type ChosenDecision, groupOf, kindCounts, setKey } from "../src/cards/changes-card";

const change = (id: string, kind: string, index: number, size = 3, group = "e1", path: string[] = []) => ({
  id,
  name: `${kind}_cell`,
  args: {},
  path,
  proposal: { kind, cell_id: id, before: "", after: "x", diff: [], decision: "pending", group: { id: group, index, size } },
});

test("the pending changes of one set are drawn as one card, in the set's order, where the first was", () => {
  const run = { id: "r1", name: "run_cell", args: {} };
  const alone = { id: "e9", name: "edit_cell", args: {}, proposal: { kind: "edit", cell_id: "c", before: "", after: "", diff: [], decision: "pending" } };
  const arranged = arrangeApprovals([run, change("d1", "delete", 2), alone, change("e1", "edit", 0), change("i1", "insert", 1)]);
  assert.equal(arranged.length, 3);
  assert.deepEqual(arranged[0], { approval: run });
  assert.ok("changes" in arranged[1]);
  assert.deepEqual(
    (arranged[1] as { changes: { id: string }[] }).changes.map((c) => c.id),
    ["e1", "i1", "d1"],
  );
  assert.deepEqual(arranged[2], { approval: alone });
});

test("a set stays one card as its changes leave; a set of one, or two askers, are not merged", () => {
  const [left] = arrangeApprovals([change("d1", "delete", 2)]);
  assert.ok("changes" in left); // the others were answered: still the set's card
  const [only] = arrangeApprovals([change("e1", "edit", 0, 1)]);
  assert.ok("approval" in only);
  const twoAskers = arrangeApprovals([change("e1", "edit", 0, 2, "e1", []), change("e2", "edit", 1, 2, "e1", ["sub"])]);
  assert.equal(twoAskers.length, 2);
  assert.ok(twoAskers.every((entry) => "changes" in entry && entry.changes.length === 1));
});

test("a malformed group is no group", () => {
  assert.equal(groupOf({ group: { id: 3, index: 0, size: 2 } }), null);
  assert.equal(groupOf({ group: "e1" }), null);
  assert.equal(groupOf(null), null);
  assert.deepEqual(groupOf({ group: { id: "e1", index: 1, size: 2 } }), { id: "e1", index: 1, size: 2 });
});

test("the kinds are counted in the card's order, added first", () => {
  assert.deepEqual(kindCounts(["edit", "edit", "delete", "insert", "edit"]), [
    ["insert", 1],
    ["edit", 3],
    ["delete", 1],
  ]);
  assert.deepEqual(kindCounts([]), []);
});

test("decisions are sent only once every change has one, one per change in order", () => {
  const changes = [change("e1", "edit", 0), change("i1", "insert", 1), change("d1", "delete", 2)];
  const chosen = new Map<string, ChosenDecision>();
  chosen.set("i1", { accepted: false });
  assert.equal(answers(changes, chosen), null);
  chosen.set("e1", { accepted: true, text: "x = 100" });
  chosen.set("d1", { accepted: true });
  assert.deepEqual(answers(changes, chosen), [
    { id: "e1", accepted: true, text: "x = 100" },
    { id: "i1", accepted: false },
    { id: "d1", accepted: true },
  ]);
});

test("a set's decisions outlive a redraw, are told apart by set, and the oldest sets go", () => {
  const decisions = new ChangeDecisions();
  const one = setKey([change("e1", "edit", 0), change("e2", "edit", 1)]);
  const other = setKey([change("e1", "edit", 0, 2, "e1", ["sub"]), change("e2", "edit", 1, 2, "e1", ["sub"])]);
  assert.notEqual(one, other);
  decisions.of(one).set("e1", { accepted: true });
  assert.equal(decisions.of(one).get("e1")?.accepted, true);
  assert.equal(decisions.of(other).size, 0);
  for (let n = 0; n < ChangeDecisions.REMEMBERED_SETS + 1; n++) decisions.of(`k${n}`);
  assert.equal(decisions.of(one).size, 0); // forgotten: made anew, empty
});
