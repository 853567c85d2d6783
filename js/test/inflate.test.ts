// The loader's inflation of the shared bundle: gzip bytes as the widget managers hand them
// over (a DataView, possibly into a larger buffer), and a clear error in a browser that
// has no DecompressionStream.
import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { inflate } from "../src/inflate";

const TEXT = "export default {}; // 代码 🧪 ".repeat(200);

test("gzip bytes in a DataView into a larger buffer inflate to the text", async () => {
  const packed = gzipSync(Buffer.from(TEXT, "utf8"));
  const larger = new Uint8Array(packed.length + 16);
  larger.set(packed, 7);
  assert.equal(await inflate(new DataView(larger.buffer, 7, packed.length)), TEXT);
  assert.equal(await inflate(new Uint8Array(packed).buffer), TEXT);
  assert.equal(await inflate(TEXT), TEXT); // plain text is taken as it is
});

test("a browser without DecompressionStream gets an error that names it", async () => {
  const global = globalThis as { DecompressionStream?: unknown };
  const saved = global.DecompressionStream;
  delete global.DecompressionStream;
  try {
    await assert.rejects(inflate(new Uint8Array(gzipSync("x")).buffer), /no DecompressionStream \(Chrome 80/);
  } finally {
    global.DecompressionStream = saved;
  }
});
