/**
 * A notebook cell named as the notebook shows it — `[2]` once it ran, `3` (its position)
 * before, to follow the word "cell" of the label around it — rather than by its nbformat id, which the model uses and the user
 * never sees. The name asks the notebook extension on the page (`locate`) once it is on
 * screen; until then, or with no extension, it shows the id's first characters. The id
 * stays in the tooltip. A click scrolls the notebook to the cell and selects it (`focus`).
 */
import "./cell-name.css";
import { element } from "../dom";
import { t, type Lang, type MessageKey } from "../i18n";

type NotebookReply = { ok: boolean; result?: unknown; error?: { code?: string; message?: string } };

/** Ask the notebook extension on this page (it handles `neta-nb-notebook` events). */
export function askNotebook(from: Element, op: string, args: Record<string, unknown>): Promise<NotebookReply> {
  return new Promise((resolve) => {
    const detail = { op, args, handled: false, respond: (reply: NotebookReply) => resolve(reply) };
    from.dispatchEvent(new CustomEvent("neta-nb-notebook", { bubbles: true, composed: true, detail }));
    if (!detail.handled) resolve({ ok: false, error: { code: "no_bridge" } });
  });
}

/** Where the page says the cell is: its 1-based position and its execution count. */
export interface CellPlace {
  position: number;
  execution_count: number | null;
}

/** The name of a cell at `place`: its prompt's `[count]`, or its position. */
export function cellShownName(place: CellPlace): string {
  return typeof place.execution_count === "number" ? `[${place.execution_count}]` : String(place.position);
}

/** Label `key` with its `{slot}` placeholder replaced by `node` (a cell's name). */
export function labelAround(lang: Lang, key: MessageKey, slot: string, node: Node, params: Record<string, string | number> = {}): Node[] {
  const marker = "\u0000";
  const [before, after = ""] = t(lang, key, { ...params, [slot]: marker }).split(marker);
  return [document.createTextNode(before), node, document.createTextNode(after)];
}

function placeOf(value: unknown): CellPlace | null {
  const place = value as Partial<CellPlace> | null;
  if (typeof place !== "object" || place === null || typeof place.position !== "number") return null;
  return { position: place.position, execution_count: typeof place.execution_count === "number" ? place.execution_count : null };
}

/** A button naming cell `cellId`; `known`: a name the kernel already gave (`[2]`). */
export function createCellName(cellId: string, lang: Lang, known?: string | null): HTMLButtonElement {
  const button = element("button", "neta-cell-name", known || cellId.slice(0, 8));
  button.type = "button";
  button.dataset.cellId = cellId;
  button.title = t(lang, "cell_name_hint", { id: cellId });
  button.addEventListener("click", (event) => {
    event.stopPropagation(); // not the card's own toggle
    void askNotebook(button, "focus", { cell_id: cellId }).then((reply) => {
      button.classList.toggle("neta-is-missing", !reply.ok);
      if (reply.ok) name(reply.result);
    });
  });
  const name = (result: unknown) => {
    const place = placeOf(result);
    if (place) button.textContent = cellShownName(place);
  };
  // Asked once the button is in the page (an event from a detached element reaches no one).
  const locate = (tries: number) => {
    if (!button.isConnected) {
      if (tries > 0) requestAnimationFrame(() => locate(tries - 1));
      return;
    }
    void askNotebook(button, "locate", { cell_id: cellId }).then((reply) => {
      if (reply.ok) name(reply.result);
    });
  };
  requestAnimationFrame(() => locate(10));
  return button;
}
