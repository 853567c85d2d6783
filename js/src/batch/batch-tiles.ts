/**
 * The tiles of a batch grid as data: which rows each tile stands for, its state and its
 * words. Up to `MAX_TILES` rows a tile is a row; past that each tile stands for `k`
 * consecutive rows (a bin), so a 100,000-row run draws 2,000 buttons, not 100,000. A bin
 * takes the state that most needs the eye — failed, then running, then queued — and is done
 * only when all its rows are; a partly done bin shows how much of it is done as a fill.
 * Pure functions, no DOM: the unit tests run them in Node.
 */
import { t, type Lang } from "../i18n";

export type RowState = "queued" | "running" | "done" | "failed";

/** A row's state from its character in the `states` trait (Python: `STATE_CHARS`). */
export const STATE_OF_CHAR: Readonly<Record<string, RowState>> = { q: "queued", r: "running", d: "done", f: "failed" };

export const ROW_STATES: readonly RowState[] = ["done", "failed", "running", "queued"];

/** Tiles drawn at most: past this many rows, tiles are bins of rows. */
export const MAX_TILES = 2000;

export type StateCounts = Record<RowState, number>;

export interface BatchTile {
  /** The first and last row (inclusive) the tile stands for. */
  first: number;
  last: number;
  state: RowState;
  counts: StateCounts;
}

/** Rows per tile for a run of `total` rows: 1 up to `MAX_TILES` rows. */
export function binSize(total: number): number {
  return total <= MAX_TILES ? 1 : Math.ceil(total / MAX_TILES);
}

/** The state a tile shows for rows of these counts (see the module note). */
export function tileState(counts: StateCounts): RowState {
  if (counts.failed > 0) return "failed";
  if (counts.running > 0) return "running";
  if (counts.queued > 0) return "queued";
  return "done";
}

/** The tiles of `states` (one character per row), `size` rows each. */
export function makeTiles(states: string, size: number): BatchTile[] {
  const tiles: BatchTile[] = [];
  const step = Math.max(1, Math.floor(size));
  for (let first = 0; first < states.length; first += step) {
    const last = Math.min(states.length, first + step) - 1;
    const counts: StateCounts = { queued: 0, running: 0, done: 0, failed: 0 };
    for (let row = first; row <= last; row += 1) counts[STATE_OF_CHAR[states[row]] ?? "queued"] += 1;
    tiles.push({ first, last, state: tileState(counts), counts });
  }
  return tiles;
}

/**
 * The row a click on a tile opens: its first failed row, else its first row that has
 * started (done or running: it has a session), else its first row.
 */
export function rowToOpen(states: string, tile: Pick<BatchTile, "first" | "last">): number {
  let started = -1;
  for (let row = tile.first; row <= tile.last; row += 1) {
    const state = STATE_OF_CHAR[states[row]];
    if (state === "failed") return row;
    if (started < 0 && (state === "done" || state === "running")) started = row;
  }
  return started >= 0 ? started : tile.first;
}

/** The share of a tile's rows that are done, 0–1 (the fill of a partly done bin). */
export function doneShare(tile: BatchTile): number {
  const rows = tile.last - tile.first + 1;
  return rows > 0 ? tile.counts.done / rows : 0;
}

/** `row 3: done`, or `rows 0–4: 3 done, 1 failed, 1 running` for a bin. */
export function tileTitle(lang: Lang, tile: BatchTile): string {
  if (tile.first === tile.last) return t(lang, "batch_tile", { row: tile.first, state: t(lang, `batch_state_${tile.state}`) });
  const summary = ROW_STATES.filter((state) => tile.counts[state] > 0)
    .map((state) => t(lang, `batch_${state}`, { n: tile.counts[state] }))
    .join(lang === "zh-CN" ? "，" : ", ");
  return t(lang, "batch_bin", { first: tile.first, last: tile.last, summary });
}

/** What distinguishes one drawing of a tile from another (redrawn only when it changes). */
export function tileKey(tile: BatchTile): string {
  const c = tile.counts;
  return `${tile.first}:${tile.last}:${tile.state}:${c.done}:${c.failed}:${c.running}:${c.queued}`;
}
