// The `restore` op on a real shared notebook (@jupyter/ydoc's YNotebook, as JupyterLab
// makes it: undo per cell, the cell list in the notebook's history). Its cell list is
// brought up to date only when a transaction ends, which these tests depend on: a restore
// that inserts, then deletes or edits by id, must find each cell where it is now.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { YNotebook } from "@jupyter/ydoc";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { restore } from "../src/restore";

type Cell = { id: string; source: string; cell_type?: "code" | "markdown" };

const made: YNotebook[] = [];
after(() => {
  for (const shared of made) shared.dispose();
});

function notebookOf(cells: Cell[]): { shared: YNotebook; panel: NotebookPanel } {
  const shared = YNotebook.create({ disableDocumentWideUndoRedo: true });
  made.push(shared);
  shared.insertCells(0, cells.map((cell) => ({ cell_type: cell.cell_type ?? "code", metadata: {}, ...cell })));
  shared.undoManager.clear();
  const panel = { content: { model: { sharedModel: shared } } } as unknown as NotebookPanel;
  return { shared, panel };
}

function cellsOf(shared: YNotebook): Cell[] {
  return shared.cells.map((cell) => ({ id: cell.getId(), source: cell.getSource() }));
}

const TIDIED: Cell[] = [
  { id: "setup", source: "answer = 6 * 7" },
  { id: "doomed", source: "doomed = 1" },
  { id: "added", source: "print('added')" },
  { id: "last", source: "print(answer * 3)" },
];
const BEFORE: Cell[] = [
  { id: "setup", source: "answer = 41 + 1" },
  { id: "doomed", source: "doomed = 1" },
  { id: "notes", source: "# Notes" },
  { id: "last", source: "print(answer * 3)" },
];
// As the kernel plans them, newest change first: the deleted cell back, the inserted one
// removed, the edit put back.
const PUT_BACK = [
  { op: "insert", cell_id: "notes", index: 2, cell_type: "markdown", source: "# Notes" },
  { op: "delete", cell_id: "added", expected: "print('added')" },
  { op: "set_source", cell_id: "setup", expected: "answer = 6 * 7", source: "answer = 41 + 1" },
];

test("a deleted cell put back and an inserted one removed in one restore are both done", () => {
  const { shared, panel } = notebookOf(TIDIED);
  assert.deepEqual(restore(panel, { operations: PUT_BACK }), { applied: 3 });
  assert.deepEqual(cellsOf(shared), BEFORE);
  assert.equal(shared.cells[2].cell_type, "markdown");
});

test("the whole restore is one step of the notebook's undo history", () => {
  const { shared, panel } = notebookOf(TIDIED);
  restore(panel, { operations: PUT_BACK });
  shared.undo();
  assert.deepEqual(cellsOf(shared), TIDIED);
  shared.redo();
  assert.deepEqual(cellsOf(shared), BEFORE);
});

test("a move after an insert moves the cell it names", () => {
  const { shared, panel } = notebookOf([
    { id: "a", source: "a" }, { id: "b", source: "b" }, { id: "c", source: "c" }]);
  restore(panel, {
    operations: [
      { op: "insert", cell_id: "gone", index: 0, cell_type: "code", source: "gone" },
      { op: "move", cell_id: "c", from_index: 3, to_index: 1 },
      { op: "set_source", cell_id: "b", expected: "b", source: "B" },
    ],
  });
  assert.deepEqual(cellsOf(shared).map((cell) => `${cell.id}:${cell.source}`), ["gone:gone", "c:c", "a:a", "b:B"]);
});

test("an operation that does not hold refuses the restore and nothing is changed", () => {
  const { shared, panel } = notebookOf(TIDIED);
  const edited = [...PUT_BACK.slice(0, 2), { ...PUT_BACK[2], expected: "not what the cell holds" }];
  assert.throws(() => restore(panel, { operations: edited }), { code: "changed" });
  assert.deepEqual(cellsOf(shared), TIDIED);
  assert.equal(shared.undoManager.undoStack.length, 0);
});
