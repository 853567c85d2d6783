// The batch grid's tiles as data: one per row up to MAX_TILES rows, bins of rows past
// that, each bin showing the state that most needs the eye, and the row a click opens.
import assert from "node:assert/strict";
import { test } from "node:test";
import { binSize, doneShare, MAX_TILES, makeTiles, rowToOpen, tileState, tileTitle } from "../src/batch/batch-tiles";

test("a tile per row up to MAX_TILES rows, bins of rows past that, never more tiles", () => {
  assert.equal(binSize(0), 1);
  assert.equal(binSize(MAX_TILES), 1);
  assert.equal(binSize(MAX_TILES + 1), 2);
  assert.equal(binSize(10_000), 5);
  for (const total of [1, 60, MAX_TILES, MAX_TILES + 1, 10_000, 100_003]) {
    const tiles = makeTiles("d".repeat(total), binSize(total));
    assert.ok(tiles.length <= MAX_TILES, `${total} rows: ${tiles.length} tiles`);
    // Every row is in exactly one tile, in order.
    assert.equal(tiles[0].first, 0);
    assert.equal(tiles.at(-1)?.last, total - 1);
    for (let i = 1; i < tiles.length; i += 1) assert.equal(tiles[i].first, tiles[i - 1].last + 1);
  }
});

test("one row per tile: the row's own state", () => {
  const tiles = makeTiles("qrdf", 1);
  assert.deepEqual(
    tiles.map((tile) => [tile.first, tile.last, tile.state]),
    [
      [0, 0, "queued"],
      [1, 1, "running"],
      [2, 2, "done"],
      [3, 3, "failed"],
    ],
  );
});

test("a bin shows failed first, then running, then queued; done only when all are", () => {
  assert.equal(tileState({ queued: 1, running: 1, done: 1, failed: 1 }), "failed");
  assert.equal(tileState({ queued: 3, running: 1, done: 1, failed: 0 }), "running");
  assert.equal(tileState({ queued: 1, running: 0, done: 4, failed: 0 }), "queued");
  assert.equal(tileState({ queued: 0, running: 0, done: 5, failed: 0 }), "done");
  const [bin] = makeTiles("ddqqq", 5);
  assert.equal(bin.state, "queued");
  assert.equal(doneShare(bin), 0.4);
});

test("a click on a bin opens its first failed row, else its first started row", () => {
  assert.equal(rowToOpen("ddfdf", { first: 0, last: 4 }), 2);
  assert.equal(rowToOpen("qqrdd", { first: 0, last: 4 }), 2);
  assert.equal(rowToOpen("qqqqq", { first: 0, last: 4 }), 0);
  assert.equal(rowToOpen("dddddddfdd", { first: 5, last: 9 }), 7);
});

test("titles name the row and its state, or a bin's rows and their counts", () => {
  const tiles = makeTiles("dfr", 1);
  assert.equal(tileTitle("en", tiles[1]), "row 1: failed");
  assert.equal(tileTitle("zh-CN", tiles[0]), "第 0 行：完成");
  const [bin] = makeTiles("ddfrq", 5);
  assert.equal(tileTitle("en", bin), "rows 0–4: 2 done, 1 failed, 1 running, 1 queued");
  assert.equal(tileTitle("zh-CN", bin), "第 0–4 行：2 完成，1 失败，1 运行中，1 排队中");
});
