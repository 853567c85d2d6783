/**
 * Steps of a Yjs undo history, as the notebook's and each cell's undo managers keep them:
 * Yjs merges the changes made within its capture time (half a second) into one step, and
 * `stopCapturing` ends the step being captured. A change made between two such calls, at
 * once, is therefore one step — whatever number of transactions it takes.
 */

/** A Yjs undo manager's way to end the current step. */
export interface UndoCapture {
  stopCapturing(): void;
}

/** The Yjs undo manager of a shared notebook or cell (the cell's own, or the notebook's
 * when undo is document-wide), which @jupyter/ydoc has but its interfaces do not name. */
export function undoManagerOf(shared: object): unknown {
  return (shared as { undoManager?: unknown }).undoManager;
}

/** Runs `change` as one step of an undo history: the steps before and after stay apart. */
export function oneUndoStep(manager: unknown, change: () => void): void {
  const capture = manager as UndoCapture | null | undefined;
  capture?.stopCapturing?.();
  try {
    change();
  } finally {
    capture?.stopCapturing?.();
  }
}
