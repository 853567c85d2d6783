// The page's `restore` (labextension/src/restore.ts) is all or nothing: every operation is
// checked against the notebook as the ones before it leave it, and one that does not hold
// (a user's edit, a cell moved or back already) refuses the whole request as `changed`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOperations, parseOperations } from "../labextension/src/restore";
import { BridgeFailure } from "../labextension/src/protocol";

const cells = () => [
  { id: "a", source: "x = 1" },
  { id: "new", source: "print('added')" },
  { id: "b", source: "y = 20" },
];

const refusedAs = (code: string) => (error: unknown) => error instanceof BridgeFailure && error.code === code;

test("a plan that holds is accepted in order", () => {
  const operations = parseOperations({
    operations: [
      { op: "set_source", cell_id: "b", expected: "y = 20", source: "y = 2" },
      { op: "delete", cell_id: "new", expected: "print('added')" },
      { op: "insert", cell_id: "gone", index: 1, cell_type: "markdown", source: "# Notes" },
      { op: "move", cell_id: "b", from_index: 2, to_index: 0 },
      // An operation on the text the one before it set.
      { op: "set_source", cell_id: "b", expected: "y = 2", source: "y = 0" },
    ],
  });
  assert.doesNotThrow(() => checkOperations(cells(), operations));
});

test("a user's edit, a cell moved or back already refuses the whole request", () => {
  const refused = [
    { op: "set_source", cell_id: "b", expected: "y = 2", source: "y = 0" },
    { op: "delete", cell_id: "new", expected: "print('mine')" },
    { op: "insert", cell_id: "a", index: 0, cell_type: "code", source: "x" },
    { op: "insert", cell_id: "z", index: 9, cell_type: "code", source: "x" },
    { op: "move", cell_id: "b", from_index: 0, to_index: 1 },
    { op: "set_source", cell_id: "nope", expected: "", source: "" },
  ];
  for (const operation of refused) {
    assert.throws(() => checkOperations(cells(), parseOperations({ operations: [operation] })), refusedAs("changed"), JSON.stringify(operation));
  }
  // Checked against what the earlier operations leave: the second delete finds no cell.
  const twice = parseOperations({ operations: [{ op: "delete", cell_id: "a", expected: "x = 1" }, { op: "delete", cell_id: "a", expected: "x = 1" }] });
  assert.throws(() => checkOperations(cells(), twice), refusedAs("changed"));
});

test("a malformed request is refused as such, naming the operation", () => {
  for (const args of [{}, { operations: [1] }, { operations: [{ op: "explode", cell_id: "a" }] }, { operations: [{ op: "insert", cell_id: "a", index: 0, cell_type: "python", source: "" }] }, { operations: [{ op: "move", cell_id: "a", from_index: "0", to_index: 1 }] }]) {
    assert.throws(() => parseOperations(args), refusedAs("bad_request"), JSON.stringify(args));
  }
});
