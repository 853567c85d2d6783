/**
 * Cell outputs as the page sends them to the kernel for `read`: bounded, so a notebook with
 * megabytes of output does not cross the comm whole (the kernel shows the model at most a
 * few thousand characters of an output anyway: neta_nb/tools/notebook/reading.py).
 *
 * - A text field longer than `TEXT_CHARS` keeps its head and its tail around a line that
 *   says how much was left out (the kernel's summary is a head and a tail too).
 * - An image larger than `IMAGE_CHARS` (base64) is replaced by a line naming it: cut, it
 *   would not decode.
 * - Past `TOTAL_CHARS` for the whole notebook, further outputs are replaced by one line
 *   each that says so (cells and sources are always sent whole).
 *
 * Pure (no JupyterLab imports): tested in js/test/bounded-outputs.test.ts.
 */

export const TEXT_CHARS = 100_000;
export const IMAGE_CHARS = 2_000_000;
export const TOTAL_CHARS = 8_000_000;

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

export function cutText(value: string, limit = TEXT_CHARS): string {
  if (value.length <= limit) return value;
  const half = Math.floor(limit / 2);
  const left = value.length - 2 * half;
  return `${value.slice(0, half)}\n… [${left.toLocaleString("en")} characters left out by the page] …\n${value.slice(-half)}`;
}

function size(value: Json): number {
  return typeof value === "string" ? value.length : JSON.stringify(value).length;
}

function boundData(data: { [key: string]: Json }): { [key: string]: Json } {
  const bounded: { [key: string]: Json } = {};
  const notes: string[] = [];
  for (const [mime, value] of Object.entries(data)) {
    const asText = text(value);
    if (mime.startsWith("image/") && asText !== null && asText.length > IMAGE_CHARS) {
      const kb = Math.round((asText.length * 3) / 4 / 1024);
      notes.push(`[${mime}, ${kb.toLocaleString("en")} KB: left out by the page]`);
      continue;
    }
    bounded[mime] = asText !== null && !mime.startsWith("image/") ? cutText(asText) : value;
  }
  if (notes.length > 0) {
    const plain = text(bounded["text/plain"] ?? null);
    bounded["text/plain"] = [plain, ...notes].filter((line) => line).join("\n");
  }
  return bounded;
}

/** One output, bounded, charged to `budget`. */
export function boundOutput(output: Output, budget: Budget): Output {
  if (budget.left <= 0) {
    return { output_type: "stream", name: "stdout", text: "[output left out by the page: the notebook's outputs passed its limit]\n" };
  }
  const bounded: Output = { ...output };
  const streamed = text(output.text ?? null);
  if (streamed !== null) bounded.text = cutText(streamed);
  const data = output.data;
  if (data && typeof data === "object" && !Array.isArray(data)) bounded.data = boundData(data);
  if (Array.isArray(output.traceback)) {
    bounded.traceback = output.traceback.map((line) => (typeof line === "string" ? cutText(line, 10_000) : line));
  }
  budget.left -= size(bounded as Json);
  return bounded;
}
