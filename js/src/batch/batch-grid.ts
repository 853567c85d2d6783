/**
 * A batch run as a grid (Python: `BatchGrid`, neta_nb/widgets/batch/batch_grid.py): a header of
 * counters — rows done, failed, running, queued, retries, tokens — then one tile per row,
 * coloured by its state (queued grey, running blue and pulsing, done green, failed red),
 * binned past `MAX_TILES` rows (batch-tiles.ts). Tiles are buttons: a click, Enter or Space
 * asks the kernel to open the row's session read-only under the grid (`open_row`); a
 * failed request shows under the tiles. Only one tile is in the tab order; the arrow keys,
 * Home and End move among them (a 2,000-tile grid is one Tab stop, not 2,000). The first
 * failures are listed under the tiles, each opening its row.
 *
 * The kernel sends at most a few updates a second; each redraws only the tiles whose
 * rows changed. Knows nothing of anywidget. The wire shapes have Python twins (TypedDicts
 * of the same names) in neta_nb/widgets/batch/batch_grid.py.
 */
import "./batch-grid.css";
import { formatTokens } from "../cards/token-stats";
import { element, setModifier, suppressNotebookShortcuts } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { createInlineError } from "../inline-error";
import type { Component, ComponentOptions } from "../types";
import { type BatchTile, binSize, doneShare, makeTiles, ROW_STATES, type RowState, rowToOpen, tileKey, tileTitle } from "./batch-tiles";

/** The header's counters (Python twin: `BatchCounts`). */
export interface BatchCounts {
  queued: number;
  running: number;
  done: number;
  failed: number;
  retried: number;
  input_tokens: number;
  output_tokens: number;
}

/** One failed row (Python twin: `BatchFailure`). */
export interface BatchFailure {
  idx: number;
  error: string;
}

/** `open_row`: show this row's session under the grid. */
export interface OpenRowRequest {
  idx: number;
}

/** The row shown now (the reply to `open_row`). */
export interface OpenRowReply {
  idx: number;
  session_id: string;
}

export interface BatchGridState {
  run_id: string;
  total: number;
  /** One character per row: q(ueued), r(unning), d(one), f(ailed). */
  states: string;
  counts: BatchCounts | null;
  failures: BatchFailure[];
  finished: boolean;
  /** The row whose session is shown under the grid; -1: none. */
  selected: number;
  lang: Lang;
}

export interface BatchGridOptions extends ComponentOptions<BatchGridState> {
  /** Ask the kernel to open row `idx`; absent where no kernel backs the grid. */
  openRow?: (idx: number) => Promise<unknown>;
}

export type BatchGrid = Component<BatchGridState>;

/** Failures listed under the tiles (the kernel sends up to 20; the static form shows all). */
const FAILURES_LISTED = 5;
/** Past this many tiles, smaller ones. */
const DENSE_TILES = 600;

const EMPTY_COUNTS: BatchCounts = { queued: 0, running: 0, done: 0, failed: 0, retried: 0, input_tokens: 0, output_tokens: 0 };

export function createBatchGrid(el: HTMLElement, options: BatchGridOptions = {}): BatchGrid {
  const state: BatchGridState = {
    run_id: "",
    total: 0,
    states: "",
    counts: null,
    failures: [],
    finished: false,
    selected: -1,
    lang: normalizeLang(options.lang),
  };
  const lang = () => state.lang;

  const root = element("div", "neta-root neta-batch-grid");
  const header = element("div", "neta-batch-header");
  const heading = element("div", "neta-batch-heading");
  const title = element("span", "neta-batch-title");
  const meta = element("span", "neta-batch-meta");
  const progress = element("span", "neta-batch-progress");
  heading.append(title, meta, progress);
  const chips = element("div", "neta-batch-chips");
  const chip = (name: string) => {
    const node = element("span", `neta-batch-chip neta-batch-chip-${name}`);
    const text = element("span", "neta-batch-chip-text");
    node.append(element("span", "neta-batch-dot"), text);
    chips.append(node);
    return { node, text };
  };
  const stateChips = Object.fromEntries(ROW_STATES.map((name) => [name, chip(name)])) as Record<RowState, ReturnType<typeof chip>>;
  const retried = chip("retried");
  const tokens = chip("tokens");
  header.append(heading, chips);

  const grid = suppressNotebookShortcuts(element("div", "neta-batch-tiles"));
  grid.setAttribute("role", "group");
  const note = element("div", "neta-batch-note");
  const error = createInlineError(lang, "neta-batch-error");
  const failures = element("div", "neta-batch-failures");
  const failuresTitle = element("div", "neta-batch-failures-title");
  const failureList = element("div", "neta-batch-failure-list");
  const moreFailures = element("div", "neta-batch-failures-more");
  failures.append(failuresTitle, failureList, moreFailures);
  root.append(header, grid, note, error.root, failures);
  el.append(root);

  let tiles: BatchTile[] = [];
  let nodes: HTMLButtonElement[] = [];
  let keys: string[] = [];
  let size = 1;
  let focusIndex = 0;
  let drawnLang: Lang | null = null;
  let drawnFailures = "";

  function open(row: number): void {
    error.clear();
    if (!options.openRow) {
      error.show(t(state.lang, "batch_no_kernel"));
      return;
    }
    options.openRow(row).catch(error.show);
  }

  function setFocusIndex(index: number, focus: boolean): void {
    if (nodes.length === 0) return;
    const next = Math.max(0, Math.min(nodes.length - 1, index));
    nodes[focusIndex]?.setAttribute("tabindex", "-1");
    focusIndex = next;
    nodes[next].setAttribute("tabindex", "0");
    if (focus) nodes[next].focus();
  }

  function columns(): number {
    // The grid's own track count (auto-fill): what the arrow keys move across.
    const tracks = getComputedStyle(grid).gridTemplateColumns.split(" ").filter(Boolean).length;
    return Math.max(1, tracks);
  }

  const onClick = (event: MouseEvent) => {
    const node = (event.target as Element | null)?.closest<HTMLButtonElement>(".neta-batch-tile");
    if (!node || !grid.contains(node)) return;
    const index = Number(node.dataset.tile);
    const tile = tiles[index];
    if (!tile) return;
    setFocusIndex(index, false);
    open(rowToOpen(state.states, tile));
  };
  const onKey = (event: KeyboardEvent) => {
    const moves: Record<string, number> = {
      ArrowRight: 1,
      ArrowLeft: -1,
      ArrowDown: columns(),
      ArrowUp: -columns(),
      Home: -nodes.length,
      End: nodes.length,
    };
    const move = moves[event.key];
    if (move === undefined) return;
    event.preventDefault();
    setFocusIndex(focusIndex + move, true);
  };
  grid.addEventListener("click", onClick);
  grid.addEventListener("keydown", onKey);

  function drawTiles(): void {
    const nextSize = binSize(state.states.length);
    const next = makeTiles(state.states, nextSize);
    if (next.length !== nodes.length || nextSize !== size) {
      size = nextSize;
      nodes = next.map((_, index) => {
        const node = element("button", "neta-batch-tile");
        node.type = "button";
        node.dataset.tile = String(index);
        node.tabIndex = -1;
        return node;
      });
      keys = next.map(() => "");
      grid.replaceChildren(...nodes);
      focusIndex = Math.min(focusIndex, Math.max(0, nodes.length - 1));
      if (nodes.length) nodes[focusIndex].tabIndex = 0;
    }
    tiles = next;
    const relabel = drawnLang !== state.lang;
    for (let index = 0; index < next.length; index += 1) {
      const tile = next[index];
      const key = tileKey(tile);
      if (key === keys[index] && !relabel) continue;
      keys[index] = key;
      const node = nodes[index];
      setModifier(node, "neta-is-", ROW_STATES, tile.state);
      const share = tile.state === "queued" ? doneShare(tile) : 0;
      node.classList.toggle("neta-is-partial", share > 0);
      if (share > 0) node.style.setProperty("--neta-batch-share", `${Math.round(share * 100)}%`);
      else node.style.removeProperty("--neta-batch-share");
      const label = tileTitle(state.lang, tile);
      node.title = label;
      node.setAttribute("aria-label", label);
    }
    drawnLang = state.lang;
    grid.classList.toggle("neta-is-dense", next.length > DENSE_TILES);
    for (const [index, node] of nodes.entries()) {
      const tile = next[index];
      const shown = state.selected >= tile.first && state.selected <= tile.last;
      node.classList.toggle("neta-is-selected", shown);
      if (shown) node.setAttribute("aria-current", "true");
      else node.removeAttribute("aria-current");
    }
  }

  function drawHeader(counts: BatchCounts): void {
    const current = state.lang;
    title.textContent = t(current, "batch_title");
    const rows = state.total === 1 ? t(current, "batch_rows_one") : t(current, "batch_rows", { n: state.total.toLocaleString("en-US") });
    const pending = counts.queued + counts.running;
    const status = state.finished
      ? t(current, pending > 0 ? "batch_status_stopped" : "batch_status_finished")
      : t(current, pending === state.total && counts.running === 0 ? "batch_status_waiting" : "batch_status_running");
    meta.textContent = `${rows} · ${status}`;
    root.classList.toggle("neta-is-running", !state.finished);
    const finishedRows = counts.done + counts.failed;
    progress.textContent = `${finishedRows.toLocaleString("en-US")} / ${state.total.toLocaleString("en-US")}`;
    for (const name of ROW_STATES) {
      const { node, text } = stateChips[name];
      text.textContent = t(current, `batch_${name}`, { n: counts[name].toLocaleString("en-US") });
      node.classList.toggle("neta-is-zero", counts[name] === 0);
    }
    retried.text.textContent = t(current, "batch_retried", { n: counts.retried });
    retried.node.hidden = counts.retried === 0;
    tokens.text.textContent = t(current, "batch_tokens", { input: formatTokens(counts.input_tokens), output: formatTokens(counts.output_tokens) });
    tokens.node.title = `${t(current, "input_tokens")} ${counts.input_tokens.toLocaleString("en-US")} · ${t(current, "output_tokens")} ${counts.output_tokens.toLocaleString("en-US")}`;
  }

  function drawFailures(counts: BatchCounts): void {
    const current = state.lang;
    const listed = state.failures.slice(0, FAILURES_LISTED);
    // Rebuilt only when they change: a focused failure keeps its focus through updates.
    const drawn = JSON.stringify([current, listed, counts.failed]);
    if (drawn === drawnFailures) return;
    drawnFailures = drawn;
    failures.hidden = listed.length === 0;
    failuresTitle.textContent = t(current, "batch_failures");
    failureList.replaceChildren(
      ...listed.map((failure) => {
        const button = element("button", "neta-batch-failure");
        button.type = "button";
        button.append(
          element("span", "neta-batch-failure-row", t(current, "batch_tile", { row: failure.idx, state: t(current, "batch_state_failed") })),
          element("span", "neta-batch-failure-error", failure.error),
        );
        button.title = failure.error;
        button.addEventListener("click", () => open(failure.idx));
        return button;
      }),
    );
    const more = counts.failed - listed.length;
    moreFailures.hidden = more <= 0;
    moreFailures.textContent = more > 0 ? t(current, "batch_more_failures", { n: more }) : "";
  }

  function render(): void {
    const current = state.lang;
    root.lang = current;
    const counts = { ...EMPTY_COUNTS, ...(state.counts ?? {}) };
    drawHeader(counts);
    grid.setAttribute("aria-label", t(current, "batch_tiles_label"));
    drawTiles();
    const lines: string[] = [];
    if (size > 1) lines.push(t(current, "batch_binned", { k: size }));
    if (state.selected >= 0) lines.push(t(current, "batch_row_shown", { row: state.selected }));
    note.textContent = lines.join(" ");
    note.hidden = lines.length === 0;
    drawFailures(counts);
  }

  render();

  // The kernel's update of several traits arrives as one change event per trait, in one
  // task: drawn once, after the last of them.
  let pending = false;
  let destroyed = false;
  function scheduleRender(): void {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      if (!destroyed) render();
    });
  }

  return {
    update(patch) {
      if (patch.run_id !== undefined) state.run_id = String(patch.run_id);
      if (patch.total !== undefined) state.total = Number(patch.total) || 0;
      if (patch.states !== undefined) state.states = String(patch.states ?? "");
      if (patch.counts !== undefined) state.counts = patch.counts;
      if (patch.failures !== undefined) state.failures = Array.isArray(patch.failures) ? patch.failures : [];
      if (patch.finished !== undefined) state.finished = Boolean(patch.finished);
      if (patch.selected !== undefined) state.selected = Number(patch.selected ?? -1);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      scheduleRender();
    },
    destroy() {
      destroyed = true;
      grid.removeEventListener("click", onClick);
      grid.removeEventListener("keydown", onKey);
      root.remove();
    },
  };
}
