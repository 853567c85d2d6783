/**
 * The context chip above the chat input: the notebook's active cell (or its multi-cell
 * selection), following the focus as the page's extension tells it
 * (`neta-nb-cell-focus` on the view's root, js/labextension/src/cell-focus.ts: one event per
 * change of cell, never per keystroke). The user can remove it (×: hidden until the focus
 * moves to other cells) or pin it (it stays on those cells when the focus moves). A
 * prompt sent while it shows carries its cells' ids (`cells` of the send): the kernel reads
 * their text from the page then, as for `@cell:<id>` — the chip's own label may be older
 * than the text, what is sent never is.
 */
import { element, svgIcon } from "../dom";
import { type Lang, t } from "../i18n";
import { NOTEBOOK_BRIDGE_EVENT, type NotebookBridgeDetail, type NotebookBridgeReply } from "./notebook-bridge";
import "./cell-chip.css";

export const CELL_FOCUS_EVENT = "neta-nb-cell-focus";

/** A cell as the extension describes it (TS twin: `FocusCell`, js/labextension/src/cell-focus.ts). */
export interface FocusCell {
  id: string;
  /** 0 the first cell. */
  index: number;
  cell_type: string;
  execution_count: number | null;
  first_line: string;
}

export interface CellFocus {
  active: FocusCell | null;
  selection: FocusCell[];
}

export interface CellChip {
  root: HTMLElement;
  /** The ids of the cells a prompt sent now carries ([]: none). */
  cells(): string[];
  destroy(): void;
}

const CELL_ICON = ["M5.5 2.5H3v11h2.5", "M10.5 2.5H13v11h-2.5"];
const PIN_ICON = ["M6 2h4l-.5 4 2.5 2.5v1H4v-1L6.5 6z", "M8 9.5V14"];
const LINE_CHARS = 40;

/** The most cells one prompt's chip may carry (Python twin: `MAX_CHIP_CELLS`,
 * neta_nb/widgets/chat/requests/cell_context.py): a larger selection shows as too many,
 * and a Send is refused with the reason before anything goes. */
export const MAX_CHIP_CELLS = 50;

function isFocus(value: unknown): value is CellFocus {
  const focus = value as Partial<CellFocus> | null;
  return typeof focus === "object" && focus !== null && Array.isArray(focus.selection) && "active" in focus;
}

function shownCells(focus: CellFocus | null): FocusCell[] {
  if (!focus) return [];
  if (focus.selection.length > 1) return focus.selection;
  return focus.active ? [focus.active] : [];
}

function key(cells: FocusCell[]): string {
  return cells.map((cell) => cell.id).join(",");
}

/** The chip's words: `In [3] · df.head()`, `Cell 4 · # Notes`, `Cells 3–5`. */
export function chipText(lang: Lang, cells: FocusCell[]): string {
  if (cells.length > MAX_CHIP_CELLS) return t(lang, "cell_chip_too_many", { count: cells.length, max: MAX_CHIP_CELLS });
  if (cells.length > 1) {
    const positions = cells.map((cell) => cell.index + 1);
    return t(lang, "cell_chip_cells", { first: Math.min(...positions), last: Math.max(...positions) });
  }
  const [cell] = cells;
  const text = cell.first_line.length > LINE_CHARS ? `${cell.first_line.slice(0, LINE_CHARS - 1)}…` : cell.first_line;
  const line = text || "…";
  if (cell.execution_count !== null) return t(lang, "cell_chip_cell", { count: cell.execution_count, line });
  return t(lang, "cell_chip_new", { position: cell.index + 1, line });
}

/** The chip of the view whose root is `root` (the element the extension tells). */
export function createCellChip(root: HTMLElement, lang: () => Lang): CellChip {
  const bar = element("div", "neta-cell-chip-bar");
  bar.hidden = true;
  const chip = element("span", "neta-cell-chip");
  chip.setAttribute("role", "group");
  const text = element("span", "neta-cell-chip-text");
  const pin = element("button", "neta-cell-chip-pin");
  pin.type = "button";
  pin.append(svgIcon("neta-cell-chip-icon", PIN_ICON));
  const remove = element("button", "neta-cell-chip-remove", "×");
  remove.type = "button";
  chip.append(svgIcon("neta-cell-chip-icon", CELL_ICON), text, pin, remove);
  bar.append(chip);

  let focus: CellFocus | null = null;
  let pinned: FocusCell[] | null = null;
  let removed: string | null = null; // the cells removed, until the focus moves off them

  const shown = (): FocusCell[] => {
    if (pinned) return pinned;
    const cells = shownCells(focus);
    return key(cells) === removed ? [] : cells;
  };

  const render = () => {
    const cells = shown();
    bar.hidden = cells.length === 0;
    if (!cells.length) return;
    const words = chipText(lang(), cells);
    text.textContent = words;
    text.title = cells.map((cell) => cell.id).join(", ");
    chip.setAttribute("aria-label", `${t(lang(), "cell_chip")}: ${words}`);
    chip.classList.toggle("neta-is-pinned", pinned !== null);
    chip.classList.toggle("neta-is-over", cells.length > MAX_CHIP_CELLS);
    pin.setAttribute("aria-pressed", String(pinned !== null));
    const pinLabel = t(lang(), pinned ? "cell_chip_unpin" : "cell_chip_pin");
    pin.title = pinLabel;
    pin.setAttribute("aria-label", pinLabel);
    remove.title = t(lang(), "cell_chip_remove");
    remove.setAttribute("aria-label", remove.title);
  };

  const onFocus = (event: Event) => {
    const detail = (event as CustomEvent<unknown>).detail;
    if (!isFocus(detail)) return;
    focus = detail;
    if (removed !== null && key(shownCells(focus)) !== removed) removed = null;
    render();
  };
  root.addEventListener(CELL_FOCUS_EVENT, onFocus);

  pin.addEventListener("click", () => {
    pinned = pinned ? null : shownCells(focus).length ? shownCells(focus) : null;
    if (!pinned) removed = null;
    render();
  });
  remove.addEventListener("click", () => {
    removed = key(shown());
    pinned = null;
    render();
    root.querySelector<HTMLTextAreaElement>("textarea")?.focus();
  });

  // A view drawn after the focus was set asks for it once it is on the page, and asks
  // again when the focus comes into the chat (a view the notebook's windowing had taken
  // off the page missed what it was told meanwhile).
  let answered = false;
  const ask = () => {
    if (!root.isConnected) return;
    const detail: NotebookBridgeDetail = {
      op: "cell_focus",
      args: {},
      handled: false,
      respond: (reply: NotebookBridgeReply) => {
        if (!reply.ok || !isFocus(reply.result)) return;
        answered = true;
        onFocus(new CustomEvent(CELL_FOCUS_EVENT, { detail: reply.result }));
      },
    };
    root.dispatchEvent(new CustomEvent(NOTEBOOK_BRIDGE_EVENT, { detail, bubbles: true, composed: true }));
  };
  const timers = [0, 500, 2000].map((ms) =>
    setTimeout(() => {
      if (!answered) ask();
    }, ms),
  );
  const onFocusIn = (event: FocusEvent) => {
    // Coming from outside the view: from the notebook, not from one of its own controls.
    if (!(event.relatedTarget instanceof Node) || !root.contains(event.relatedTarget)) ask();
  };
  root.addEventListener("focusin", onFocusIn);

  return {
    root: bar,
    cells: () => shown().map((cell) => cell.id),
    destroy: () => {
      for (const timer of timers) clearTimeout(timer);
      root.removeEventListener(CELL_FOCUS_EVENT, onFocus);
      root.removeEventListener("focusin", onFocusIn);
    },
  };
}
