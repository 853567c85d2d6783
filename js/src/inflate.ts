/**
 * The text of a gzip-compressed buffer: how the shared bundle's code and styles travel
 * (Python: `WidgetBundle` in neta_nb/widgets/bundle.py). The browser's own
 * `DecompressionStream` inflates it; a browser without one gets an error that says so
 * (the loader shows it in place of the widget).
 */

/** A gzip-compressed text: a binary buffer of a model's state (plain text is taken as is). */
export type Packed = DataView | ArrayBuffer | Uint8Array | string;

/** Browsers that have `DecompressionStream` ("gzip"). */
const NEEDED = "Chrome 80, Firefox 113, Safari 16.4 or later";

export async function inflate(data: Packed): Promise<string> {
  if (typeof data === "string") return data;
  if (typeof DecompressionStream !== "function") {
    throw new Error(`this browser has no DecompressionStream (${NEEDED} have it)`);
  }
  // A copy into a plain ArrayBuffer: the manager's view may be of a shared buffer.
  const bytes = ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice()
    : new Uint8Array(data).slice();
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}
