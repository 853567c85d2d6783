/**
 * Cell outputs as the page sends them to the kernel for `read`: bounded, so a notebook with
 * megabytes of output does not cross the comm whole (the kernel shows the model at most a
 * few thousand characters of an output anyway: neta_nb/tools/notebook/reading.py).
 *
 * - A text field longer than `TEXT_CHARS` keeps its head and its tail around a line that
 *   says how much was left out (the kernel's summary is a head and a tail too).
 * - An image larger than `IMAGE_CHARS` (base64) is replaced by a line naming it: cut, it
 *   would not decode.
 * - A JSON value (application/json, plotly, vega…) or other non-text value larger than
 *   `TEXT_CHARS` is named too; an error keeps its last `TRACEBACK_FRAMES` frames.
 * - An output that would take the notebook past `TOTAL_CHARS`, and every one charged after
 *   it, is replaced by one line that says so (an error stays an error, with its name);
 *   cells and sources are always sent whole. The cells a `read` asks for are charged first
 *   (`chargeOrder`), so earlier cells' outputs never crowd out the ones the model wants.
 *
 * Pure (no JupyterLab imports): tested in js/test/bounded-outputs.test.ts.
 */

export const TEXT_CHARS = 100_000;
export const IMAGE_CHARS = 2_000_000;
/** Below the 10 MiB a websocket message may have (tornado's default, which the Jupyter
 * server keeps) with room for the cells' sources. */
export const TOTAL_CHARS = 4_000_000;
export const TRACEBACK_FRAMES = 100;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Output = { [key: string]: Json };

/** How much the notebook's outputs may still send. */
export interface Budget {
  left: number;
}

export function newBudget(): Budget {
  return { left: TOTAL_CHARS };
}

function text(value: Json): string | null {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((part) => typeof part === "string")) return value.join("");
  return null;
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

export function cutText(value: string, limit = TEXT_CHARS): string {
  if (value.length <= limit) return value;
  const half = Math.floor(limit / 2);
  // Never half a surrogate pair: a lone one cannot be encoded on the way to the kernel.
  let headEnd = half;
  if (isHigh(value.charCodeAt(headEnd - 1))) headEnd -= 1;
  let tailStart = value.length - half;
  if (isLow(value.charCodeAt(tailStart))) tailStart += 1;
  const left = tailStart - headEnd;
  return `${value.slice(0, headEnd)}\n… [${left.toLocaleString("en")} characters left out by the page] …\n${value.slice(tailStart)}`;
}

function size(value: Json): number {
  return typeof value === "string" ? value.length : JSON.stringify(value).length;
}

/** JSON-valued MIME types (application/json, plotly, vega…): never joined or cut as text. */
const isJson = (mime: string) => mime.endsWith("json");

function boundData(data: { [key: string]: Json }): { [key: string]: Json } {
  const bounded: { [key: string]: Json } = {};
  const notes: string[] = [];
  for (const [mime, value] of Object.entries(data)) {
    const raster = mime.startsWith("image/") && mime !== "image/svg+xml";
    const asText = isJson(mime) ? null : text(value);
    const whole = raster || asText === null; // sent as it is, or named when too large
    const length = asText ?? "";
    if (whole && size(value) > (raster ? IMAGE_CHARS : TEXT_CHARS)) {
      const kb = Math.round((raster ? (length.length * 3) / 4 : size(value)) / 1024);
      notes.push(`[${mime}, ${kb.toLocaleString("en")} KB: left out by the page]`);
      continue;
    }
    bounded[mime] = whole ? value : cutText(length);
  }
  if (notes.length > 0) {
    const plain = text(bounded["text/plain"] ?? null);
    bounded["text/plain"] = [plain, ...notes].filter((line) => line).join("\n");
  }
  return bounded;
}

/** One output, bounded, charged to `budget`. */
export function boundOutput(output: Output, budget: Budget): Output {
  const bounded: Output = { ...output };
  const streamed = text(output.text ?? null);
  if (streamed !== null) bounded.text = cutText(streamed);
  const data = output.data;
  if (data && typeof data === "object" && !Array.isArray(data)) bounded.data = boundData(data);
  if (typeof output.evalue === "string") bounded.evalue = cutText(output.evalue, 10_000);
  if (Array.isArray(output.traceback)) {
    // The kernel shows the model the last 20 lines: the last 100 frames are plenty.
    bounded.traceback = output.traceback.slice(-TRACEBACK_FRAMES).map((line) => (typeof line === "string" ? cutText(line, 10_000) : line));
  }
  const cost = size(bounded as Json);
  if (cost > budget.left) {
    budget.left = 0; // and every later output is left out too: the answer stays in order
    const note = "[output left out by the page: the notebook's outputs passed its limit]\n";
    if (output.output_type === "error") {
      return { output_type: "error", ename: String(output.ename ?? "Error"), evalue: note.trim(), traceback: [] };
    }
    return { output_type: "stream", name: "stdout", text: note };
  }
  budget.left -= cost;
  return bounded;
}

/** What a `read` asks for, as read_notebook's arguments: positions `start`..`end` (1-based,
 * inclusive; no end: to the last), or the one cell `cell_id`. */
export interface ReadFocus {
  start?: unknown;
  end?: unknown;
  cell_id?: unknown;
}

/** The order in which a `read` charges cells to the budget: the cells asked for first, in
 * document order, then the others (an older kernel that sends no focus: document order). */
export function chargeOrder(ids: readonly string[], focus: ReadFocus): number[] {
  const positions = ids.map((_, index) => index);
  let wanted: (index: number) => boolean;
  if (typeof focus.cell_id === "string") {
    wanted = (index) => ids[index] === focus.cell_id;
  } else {
    const start = typeof focus.start === "number" ? Math.max(1, focus.start) : 1;
    const end = typeof focus.end === "number" ? focus.end : Number.POSITIVE_INFINITY;
    wanted = (index) => index + 1 >= start && index + 1 <= end;
  }
  return [...positions.filter(wanted), ...positions.filter((index) => !wanted(index))];
}
