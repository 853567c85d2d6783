// The context chip's words: a cell that ran by its execution count, one that did not by
// its position (1 the first, as read_notebook counts), a selection by its first and last.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { chipText, MAX_CHIP_CELLS, type FocusCell } from "../src/chat/cell-chip";

const cell = (index: number, count: number | null, line: string): FocusCell => ({
  id: `c${index}`,
  index,
  cell_type: "code",
  execution_count: count,
  first_line: line,
});

test("a cell is named by its execution count and first line, cut to 40 characters", () => {
  assert.equal(chipText("en", [cell(3, 4, "total = sum(rows)")]), "In [4] · total = sum(rows)");
  assert.equal(chipText("en", [cell(0, null, "# Notes")]), "Cell 1 · # Notes");
  assert.equal(chipText("en", [cell(2, 7, "x".repeat(60))]), `In [7] · ${"x".repeat(39)}…`);
  assert.equal(chipText("en", [cell(2, 7, "")]), "In [7] · …");
});

test("a selection is named by its first and last positions", () => {
  assert.equal(chipText("en", [cell(2, 1, "a"), cell(3, 2, "b"), cell(4, null, "c")]), "Cells 3–5");
});

test("a selection larger than a prompt may carry says so, in the Python limit's number", () => {
  const many = Array.from({ length: 60 }, (_, index) => cell(index, index + 1, "x"));
  assert.equal(chipText("en", many), "60 cells: too many to send (at most 50)");
  assert.equal(chipText("en", many.slice(0, 50)), "Cells 1–50");
  // The two limits are one number (the tests run from js/, compiled elsewhere).
  const python = readFileSync(join(process.cwd(), "../neta_nb/widgets/chat/requests/cell_context.py"), "utf8");
  assert.match(python, new RegExp(`^MAX_CHIP_CELLS = ${MAX_CHIP_CELLS}$`, "m"));
});
