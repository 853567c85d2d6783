/**
 * `restore`: puts cells back, as a rewind or fork with the notebook asks (the kernel plans
 * it: neta_nb/tools/notebook/changes/restore.py), in ONE step of the notebook's undo history —
 * its Undo Cell Operation (Z in command mode) takes the whole restore back at once.
 *
 * `operations`, made in order, each only while the cell is as the plan expects:
 * - `{op: "set_source", cell_id, expected, source}`: the cell's text, while it is `expected`;
 * - `{op: "delete", cell_id, expected}`: a cell the agent inserted, while it holds `expected`;
 * - `{op: "insert", cell_id, index, cell_type, source}`: a cell the agent deleted, with its
 *   id, while no cell has that id;
 * - `{op: "move", cell_id, from_index, to_index}`: a moved cell back, while at `from_index`
 *   (indices from 0).
 *
 * All or nothing: every operation is checked first against the notebook as it will be
 * when its turn comes (synchronously: no keystroke lands between the check and the
 * change); one that does not hold refuses the whole request (`changed`) and nothing is
 * done — the kernel reads the notebook again and plans anew, never overwriting a user's edit.
 */
import type { NotebookPanel } from "@jupyterlab/notebook";
import { BridgeFailure } from "./protocol";
import { oneUndoStep, undoManagerOf } from "./undo-step";

type Args = Record<string, unknown>;

const CELL_TYPES = ["code", "markdown", "raw"] as const;
type CellType = (typeof CELL_TYPES)[number];

type Operation =
  | { op: "set_source"; cell_id: string; expected: string; source: string }
  | { op: "delete"; cell_id: string; expected: string }
  | { op: "insert"; cell_id: string; index: number; cell_type: CellType; source: string }
  | { op: "move"; cell_id: string; from_index: number; to_index: number };

function text(value: Record<string, unknown>, name: string, at: number): string {
  const found = value[name];
  if (typeof found !== "string") throw new BridgeFailure("bad_request", `operation ${at}: '${name}' must be a string`);
  return found;
}

function integer(value: Record<string, unknown>, name: string, at: number): number {
  const found = value[name];
  if (typeof found !== "number" || !Number.isInteger(found)) throw new BridgeFailure("bad_request", `operation ${at}: '${name}' must be an integer`);
  return found;
}

/** The request's operations, each well formed (`bad_request` names the first that is not). */
export function parseOperations(args: Args): Operation[] {
  const listed = args.operations;
  if (!Array.isArray(listed)) throw new BridgeFailure("bad_request", "'operations' must be a list");
  return listed.map((item: unknown, at: number): Operation => {
    if (typeof item !== "object" || item === null) throw new BridgeFailure("bad_request", `operation ${at} must be an object`);
    const value = item as Record<string, unknown>;
    const cellId = text(value, "cell_id", at);
    switch (value.op) {
      case "set_source":
        return { op: "set_source", cell_id: cellId, expected: text(value, "expected", at), source: text(value, "source", at) };
      case "delete":
        return { op: "delete", cell_id: cellId, expected: text(value, "expected", at) };
      case "insert": {
        const type = value.cell_type;
        if (!CELL_TYPES.includes(type as CellType)) throw new BridgeFailure("bad_request", `operation ${at}: 'cell_type' must be one of ${CELL_TYPES.join(", ")}`);
        return { op: "insert", cell_id: cellId, index: integer(value, "index", at), cell_type: type as CellType, source: text(value, "source", at) };
      }
      case "move":
        return { op: "move", cell_id: cellId, from_index: integer(value, "from_index", at), to_index: integer(value, "to_index", at) };
      default:
        throw new BridgeFailure("bad_request", `operation ${at}: 'op' must be set_source, delete, insert or move`);
    }
  });
}

/** A cell as the check follows it: its id and text. */
interface Planned {
  id: string;
  source: string;
}

/** Checks every operation against `cells` (the notebook now) changed by the ones before
 * it; the first that does not hold is refused (`changed`). */
export function checkOperations(cells: Planned[], operations: Operation[]): void {
  const notebook = cells.map((cell) => ({ ...cell }));
  const refuse = (why: string) => {
    throw new BridgeFailure("changed", `${why}; read the notebook again`);
  };
  for (const operation of operations) {
    const index = notebook.findIndex((cell) => cell.id === operation.cell_id);
    if (operation.op === "insert") {
      if (index >= 0) refuse(`cell ${operation.cell_id} is in the notebook already`);
      if (operation.index < 0 || operation.index > notebook.length) refuse(`there is no place ${operation.index} for cell ${operation.cell_id}`);
      notebook.splice(operation.index, 0, { id: operation.cell_id, source: operation.source });
      continue;
    }
    if (index < 0) refuse(`no cell has the id ${JSON.stringify(operation.cell_id)}`);
    if (operation.op === "move") {
      if (index !== operation.from_index) refuse(`cell ${operation.cell_id} moved`);
      if (operation.to_index < 0 || operation.to_index >= notebook.length) refuse(`there is no place ${operation.to_index} for cell ${operation.cell_id}`);
      notebook.splice(operation.to_index, 0, ...notebook.splice(index, 1));
      continue;
    }
    if (notebook[index].source !== operation.expected) refuse(`cell ${operation.cell_id} changed`);
    if (operation.op === "delete") notebook.splice(index, 1);
    else notebook[index].source = operation.source;
  }
}

export function restore(panel: NotebookPanel, args: Args): unknown {
  const operations = parseOperations(args);
  const model = panel.content.model;
  if (!model) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  const shared = model.sharedModel;
  checkOperations(
    shared.cells.map((cell) => ({ id: cell.getId(), source: cell.getSource() })),
    operations,
  );
  // One transaction per operation, each in the notebook's name (so its undo history records
  // even the texts), made at once: one step of that history. Not one enclosing transaction:
  // the notebook's cell list, which each operation looks its cell up in, is brought up to
  // date only when a transaction ends — inside one, an operation after an insert or a
  // delete would find its cell at the old place and change another.
  oneUndoStep(undoManagerOf(shared), () => {
    for (const operation of operations) {
      const index = shared.cells.findIndex((cell) => cell.getId() === operation.cell_id);
      if (operation.op === "insert") {
        shared.insertCell(operation.index, { id: operation.cell_id, cell_type: operation.cell_type, source: operation.source, metadata: {} });
      } else if (operation.op === "move") {
        shared.moveCell(index, operation.to_index);
      } else if (operation.op === "delete") {
        shared.deleteCell(index);
      } else {
        const cell = shared.cells[index];
        shared.transact(() => cell.setSource(operation.source));
      }
    }
  });
  return { applied: operations.length };
}
