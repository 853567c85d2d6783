/**
 * Which cell of a notebook the user is looking at, for the chat's context chip and `@this`.
 *
 * The notebook's active cell, and its selection when more than one cell is selected, as
 * the user last set them — a cell that shows a chat view does not count (clicking into the
 * chat makes its cell active: `@this` stays on the cell the user came from). Told to the
 * chat views of the notebook (inline and in a side panel) as one `neta-nb-cell-focus`
 * event on each view's root when it changes, debounced: moving through cells sends one,
 * typing in a cell none. `read` answers `active_cell_id` from here, and the op
 * `cell_focus` gives a view drawn later the focus as it is.
 */
import type { Cell } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";

export const CELL_FOCUS_EVENT = "neta-nb-cell-focus";

/** Milliseconds the focus must rest before the views are told. */
export const FOCUS_DEBOUNCE_MS = 150;

/** A chat view's root element (js/src/chat/chat-view.ts). */
const CHAT_VIEW = ".neta-chat-view";

/** A cell as the chip names it (Python twin: none; TS twin: `FocusCell`, js/src/chat/cell-chip.ts). */
export interface FocusCell {
  id: string;
  /** 0 the first cell, as `@cells[a:b]` counts. */
  index: number;
  cell_type: string;
  execution_count: number | null;
  first_line: string;
}

/** The event's `detail`: the active cell, and the selection when it holds more than one. */
export interface CellFocus {
  active: FocusCell | null;
  selection: FocusCell[];
}

const focusOf = new WeakMap<NotebookPanel, CellFocus>();

/** The focus of `panel` as last noted (nothing noted yet: its active cell now). */
export function cellFocus(panel: NotebookPanel): CellFocus {
  return focusOf.get(panel) ?? current(panel) ?? { active: null, selection: [] };
}

function holdsChat(cell: Cell): boolean {
  return cell.node.querySelector(CHAT_VIEW) !== null;
}

function describe(cell: Cell, index: number): FocusCell {
  const model = cell.model;
  const source = model.sharedModel.getSource();
  const line = source.split("\n").find((text) => text.trim() !== "") ?? "";
  const count = model.type === "code" ? ((model as unknown as { executionCount: number | null }).executionCount ?? null) : null;
  return { id: model.id, index, cell_type: model.type, execution_count: count, first_line: line.trim().slice(0, 80) };
}

/** The focus now, or null while it is on a chat's cell (the last one stands). */
function current(panel: NotebookPanel): CellFocus | null {
  const notebook = panel.content;
  const active = notebook.activeCell;
  if (!active || holdsChat(active)) return null;
  const widgets = notebook.widgets;
  const selected = widgets.flatMap((cell, index) => (notebook.isSelectedOrActive(cell) && !holdsChat(cell) ? [describe(cell, index)] : []));
  return { active: describe(active, notebook.activeCellIndex), selection: selected.length > 1 ? selected : [] };
}

function key(focus: CellFocus): string {
  const ids = (cells: FocusCell[]) => cells.map((cell) => `${cell.id}@${cell.index}`).join(",");
  return `${focus.active ? ids([focus.active]) : ""}|${ids(focus.selection)}`;
}

/** Follow the focus of `panel`; `chats()` gives the roots of its views' hosts. */
export function followCellFocus(panel: NotebookPanel, hosts: () => Element[]): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let told = "";
  const tell = () => {
    timer = undefined;
    const focus = focusOf.get(panel);
    if (panel.isDisposed || !focus) return;
    const said = key(focus);
    if (said === told) return; // the same cells: a keystroke, a re-render
    told = said;
    for (const host of [panel.node, ...hosts()]) {
      for (const view of host.querySelectorAll(CHAT_VIEW)) {
        view.dispatchEvent(new CustomEvent(CELL_FOCUS_EVENT, { detail: focus }));
      }
    }
  };
  // Noted at once (a click on a cell, then straight into the chat, keeps that cell), told
  // once the focus has rested.
  const soon = () => {
    const focus = current(panel);
    if (!focus) return; // on a chat's cell: the last focus stands
    focusOf.set(panel, focus);
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(tell, FOCUS_DEBOUNCE_MS);
  };
  panel.content.activeCellChanged.connect(soon);
  panel.content.selectionChanged.connect(soon);
  panel.disposed.connect(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
  soon();
}
