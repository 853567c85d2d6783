/**
 * The cells a live widget (a chat, mostly) was displayed in, told to the page.
 *
 * A notebook reloaded (or opened again) while its kernel lives shows what the file holds:
 * where the file was saved before a cell ran again, an older chat whose model the kernel
 * no longer has — its static form, the saved transcript, alone. The kernel's chat that
 * cell displayed lives on, and the widget manager brings its model onto the page without
 * drawing it anywhere. Its `_shown_in` trait (`{model_id, cells: {cell id: run}}`, Python:
 * `NetaWidget._shown_in`) names the cells and the runs that displayed it; the loader
 * (./loader.ts, bound to every model from its first moment) keeps it in a registry on
 * `globalThis` under `Symbol.for("neta_nb.shown_in")` (model id → {cell id: run}) and
 * dispatches `neta-nb-shown-in`
 * on `document`, so that the notebook bridge (js/labextension/src/reattach.ts) can offer
 * the live chat where the cell shows the saved one. A model that closes leaves the
 * registry.
 */

/** Dispatched on `document` when a live model's cells are known or change. */
export const SHOWN_IN_EVENT = "neta-nb-shown-in";
const REGISTRY = Symbol.for("neta_nb.shown_in");

interface ShownInModel {
  get(name: string): unknown;
  on(name: string, callback: () => void): void;
  off(name: string, callback: () => void): void;
}

/** A cell's id → the number of the (latest) run of it that displayed the widget; a later
 * run of any cell has a higher number. */
export type CellRuns = Record<string, number>;

/** Model id → the cells that displayed it. */
export function shownIn(): Map<string, CellRuns> {
  const global = globalThis as { [REGISTRY]?: Map<string, CellRuns> };
  global[REGISTRY] ??= new Map();
  return global[REGISTRY];
}

function read(value: unknown): { modelId: string; cells: CellRuns } | null {
  if (typeof value !== "object" || value === null) return null;
  const { model_id: modelId, cells } = value as { model_id?: unknown; cells?: unknown };
  if (typeof modelId !== "string" || !modelId || typeof cells !== "object" || cells === null) return null;
  const runs = Object.entries(cells).filter((entry): entry is [string, number] => typeof entry[1] === "number");
  return { modelId, cells: Object.fromEntries(runs) };
}

/** Keep `model`'s cells in the registry while it lives; returns what removes them. */
export function announceShownIn(model: ShownInModel): () => void {
  let known: string | null = null;
  const update = () => {
    const shown = read(model.get("_shown_in"));
    if (!shown) return;
    known = shown.modelId;
    shownIn().set(shown.modelId, shown.cells);
    document.dispatchEvent(new CustomEvent(SHOWN_IN_EVENT, { detail: { model_id: shown.modelId, cells: shown.cells } }));
  };
  update();
  model.on("change:_shown_in", update);
  return () => {
    model.off("change:_shown_in", update);
    if (known) shownIn().delete(known);
  };
}
