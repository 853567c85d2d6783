/**
 * The operations of the notebook bridge, on the live model of one notebook panel: what the
 * user sees, unsaved edits included. Every change is made as a user's would be — an edit is
 * one step of the cell's undo history, a run goes through the notebook's cell executor —
 * and leaves the notebook dirty.
 */
import type { ISessionContextDialogs } from "@jupyterlab/apputils";
import type { Cell, ICellModel, ICodeCellModel } from "@jupyterlab/cells";
import { type INotebookCellExecutor, type INotebookTracker, KernelError, NotebookActions, type NotebookPanel, runCell } from "@jupyterlab/notebook";
import type * as nbformat from "@jupyterlab/nbformat";
import { cellFocus } from "./cell-focus";
import { type FileOpener, openFile } from "./open-file";
import { restore } from "./restore";
import { BridgeFailure } from "./protocol";
import { oneUndoStep, type UndoCapture, undoManagerOf } from "./undo-step";
import { type Budget, boundOutput, chargeOrder, newBudget, type ReadFocus } from "./bounded-outputs";

/** The page's contents service (JupyterLab's `serviceManager.contents`), as `create`
 * uses it: the server's files, as the file browser sees them. */
export interface ContentsService {
  get(path: string, options: { content: boolean }): Promise<{ type: string; path: string }>;
  save(path: string, options: { type: "notebook"; format: "json"; content: unknown }): Promise<{ path: string }>;
}

/** Services the ops use besides the panel (any may be missing on an odd page). */
export interface OpServices {
  executor: INotebookCellExecutor | null;
  sessionDialogs: ISessionContextDialogs | null;
  /** The page's notebooks (`notebooks`, and `read` of another one). */
  tracker?: INotebookTracker | null;
  contents?: ContentsService | null;
  /** Opens a path under the server's root in the page (`open_file`). */
  openFile?: FileOpener | null;
}

type Args = Record<string, unknown>;
/** `target`: the element the request came from (the chat view's own). */
type Op = (panel: NotebookPanel, args: Args, services: OpServices, target?: EventTarget | null) => unknown;

const CELL_TYPES = ["code", "markdown", "raw"] as const;

function stringArg(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string") throw new BridgeFailure("bad_request", `'${name}' must be a string`);
  return value;
}

function cells(panel: NotebookPanel): ICellModel[] {
  const model = panel.content.model;
  if (!model) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  const list: ICellModel[] = [];
  for (let i = 0; i < model.cells.length; i++) list.push(model.cells.get(i));
  return list;
}

function findCell(panel: NotebookPanel, cellId: string): { cell: ICellModel; index: number } {
  const index = cells(panel).findIndex((cell) => cell.id === cellId);
  if (index < 0) throw new BridgeFailure("no_cell", `no cell with id ${JSON.stringify(cellId)} in ${panel.context.path}`);
  return { cell: cells(panel)[index], index };
}

function isCode(cell: ICellModel): cell is ICodeCellModel {
  return cell.type === "code";
}

function requireCode(cell: ICellModel): ICodeCellModel {
  if (!isCode(cell)) throw new BridgeFailure("not_code", `cell ${cell.id} is a ${cell.type} cell, not a code cell`);
  return cell;
}

function expectSource(cell: ICellModel, expected: string): void {
  if (cell.sharedModel.getSource() !== expected) {
    throw new BridgeFailure("changed", `cell ${cell.id} changed since it was read; read the notebook again`);
  }
}

/** Replaces a cell's source as the user's own edit would: one step of the cell's undo
 * history (its editor's Ctrl+Z restores the text before), the notebook marked dirty. */
function replaceSource(cell: ICellModel, source: string): void {
  oneUndoStep(undoManagerOf(cell.sharedModel), () => cell.sharedModel.setSource(source));
}

function cellJson(cell: ICellModel, budget: Budget): Record<string, unknown> {
  const base: Record<string, unknown> = { id: cell.id, cell_type: cell.type, source: cell.sharedModel.getSource() };
  if (isCode(cell)) {
    base.execution_count = cell.executionCount ?? null;
    // Bounded: megabytes of output do not cross the comm (./bounded-outputs.ts).
    base.outputs = cell.outputs.toJSON().map((output) => boundOutput(output as Parameters<typeof boundOutput>[0], budget));
  }
  return base;
}

/** The id of the cell whose output shows the element a request came from (the chat view
 * asking), or null (a chat in a side panel). */
function chatCellId(panel: NotebookPanel, target: EventTarget | null | undefined): string | null {
  if (!(target instanceof Node)) return null;
  return panel.content.widgets.find((cell: Cell) => cell.node.contains(target))?.model.id ?? null;
}

/** The notebook's cells in order; their outputs charged to the budget the asked-for cells
 * first (`args`: read_notebook's start, end and cell_id); and the cell that shows the chat
 * asking (`chat_cell_id`: run_all leaves it out). With `path`, another notebook open on
 * the page is read the same way (`own: false`, no chat cell): reading is all the ops do to
 * another notebook. */
async function read(panel: NotebookPanel, args: Args, services?: OpServices, target?: EventTarget | null): Promise<unknown> {
  const path = args.path ?? null;
  if (path !== null && typeof path !== "string") throw new BridgeFailure("bad_request", "'path' must be a string or null");
  const source = path === null ? panel : openPanel(panel, services, path);
  if (source !== panel) await source.context.ready;
  const budget = newBudget();
  const all = cells(source);
  const json: Record<string, unknown>[] = new Array(all.length);
  for (const index of chargeOrder(all.map((cell) => cell.id), args as ReadFocus)) json[index] = cellJson(all[index], budget);
  const own = source === panel;
  const active = own ? (cellFocus(panel).active?.id ?? null) : null; // `@this` (./cell-focus.ts)
  return { path: source.context.path, dirty: source.context.model.dirty, cells: json, chat_cell_id: own ? chatCellId(panel, target) : null, active_cell_id: active, own };
}

/** The notebook panels open on the page, one per notebook (a notebook shown in two views
 * is one notebook): the asking chat's own first where it has two. */
function openPanels(panel: NotebookPanel, services: OpServices | undefined): NotebookPanel[] {
  const found: NotebookPanel[] = [panel];
  services?.tracker?.forEach((other) => {
    if (!other.isDisposed && !found.some((known) => known.context.path === other.context.path)) found.push(other);
  });
  return found;
}

/** The open notebook at `path` (as `notebooks` lists it; a leading "/" is allowed). */
function openPanel(panel: NotebookPanel, services: OpServices | undefined, path: string): NotebookPanel {
  const wanted = path.replace(/^\/+/, "");
  const open = openPanels(panel, services);
  const found = open.find((other) => other.context.path === wanted);
  if (found) return found;
  const listed = open.map((other) => JSON.stringify(other.context.path)).join(", ");
  throw new BridgeFailure("not_open", `no notebook is open at ${JSON.stringify(path)}; the open notebooks: ${listed}`);
}

/** Whether a notebook holds a neta_nb chat: a view drawn on the page, a cell showing a
 * chat's saved form, or an `%%agent` cell (its session id in the cell's metadata). */
function hasChat(panel: NotebookPanel): boolean {
  if (panel.node.querySelector(".neta-chat-view")) return true;
  return cells(panel).some((cell) => {
    if (cell.getMetadata("neta_nb") !== undefined) return true;
    if (!isCode(cell)) return false;
    for (let i = 0; i < cell.outputs.length; i++) {
      const html = cell.outputs.get(i).data["text/html"];
      const text = Array.isArray(html) ? html.join("") : html;
      if (typeof text === "string" && text.includes("neta-static-chat")) return true;
    }
    return false;
  });
}

/** The notebooks open on the page: each one's path (from the server's root), name, kernel
 * (null: none), unsaved changes, whether it is the asking chat's (`own`) and whether it
 * holds a chat. */
function notebooks(panel: NotebookPanel, _args: Args, services: OpServices): unknown {
  const listed = openPanels(panel, services).map((other) => {
    const kernel = other.sessionContext.session?.kernel ?? null;
    return {
      path: other.context.path,
      name: other.context.path.split("/").pop() ?? other.context.path,
      own: other === panel,
      chat: hasChat(other),
      dirty: other.context.model.dirty,
      kernel: kernel && { id: kernel.id, name: kernel.name, status: kernel.status },
    };
  });
  return { notebooks: listed };
}

/** The status of a failed request to the server (404: no such file), if it has one. */
function httpStatus(error: unknown): number | null {
  const status = (error as { response?: { status?: unknown } } | null)?.response?.status;
  return typeof status === "number" ? status : null;
}

/** Creates a notebook file through the server's contents API (the file browser shows it)
 * with the cells given (`notebook`: nbformat JSON), its kernel the asking notebook's where
 * it names none. Never overwrites: a file at `path` is refused (`exists`); nor makes a
 * folder (`no_folder`). It is not opened (opening starts a kernel, and takes the focus
 * from the chat). Between the check and the write another program could make the file:
 * the contents API has no "create only if absent". */
async function create(panel: NotebookPanel, args: Args, services: OpServices): Promise<unknown> {
  const path = stringArg(args, "path");
  const notebook = args.notebook;
  if (typeof notebook !== "object" || notebook === null || !Array.isArray((notebook as { cells?: unknown }).cells)) {
    throw new BridgeFailure("bad_request", "'notebook' must be a notebook's JSON with its cells");
  }
  const contents = services.contents;
  if (!contents) throw new BridgeFailure("failed", "this page offers no access to the server's files");
  try {
    const existing = await contents.get(path, { content: false });
    throw new BridgeFailure("exists", `there is already a ${existing.type} at ${JSON.stringify(existing.path)}`);
  } catch (error) {
    if (error instanceof BridgeFailure || httpStatus(error) !== 404) throw error;
  }
  const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  try {
    const found = await contents.get(folder, { content: false });
    if (found.type !== "directory") throw new BridgeFailure("no_folder", `${JSON.stringify(folder)} is a ${found.type}, not a folder`);
  } catch (error) {
    if (error instanceof BridgeFailure || httpStatus(error) !== 404) throw error;
    throw new BridgeFailure("no_folder", `there is no folder ${JSON.stringify(folder)} (a new notebook goes into a folder that exists)`);
  }
  const content = structuredClone(notebook) as { metadata?: Record<string, unknown> };
  content.metadata ??= {};
  const metadata = content.metadata;
  for (const key of ["kernelspec", "language_info"]) {
    const value = panel.content.model?.getMetadata(key);
    if (metadata[key] === undefined && value !== undefined) metadata[key] = value;
  }
  const saved = await contents.save(path, { type: "notebook", format: "json", content });
  return { path: saved.path };
}

/** A code cell's execution count when an accepted edit was applied to it, and whether the
 * bridge ran it since: an undo then knows its outputs are the edited code's. */
const editedAt = new WeakMap<ICellModel, { count: number | null; ran: boolean }>();

function edit(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const source = stringArg(args, "source");
  const { cell } = findCell(panel, cellId);
  expectSource(cell, stringArg(args, "expected"));
  replaceSource(cell, source);
  if (isCode(cell)) editedAt.set(cell, { count: cell.executionCount ?? null, ran: false });
  return { cell_id: cellId, source: cell.sharedModel.getSource() };
}

/** Puts back the text an accepted edit replaced. Outputs the edited code made (a run since
 * the edit, by the bridge or the user) would sit under code that did not make them: they
 * are cleared with the execution count, and the reply says so. */
function undo(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const before = stringArg(args, "before");
  const { cell } = findCell(panel, cellId);
  expectSource(cell, stringArg(args, "after"));
  replaceSource(cell, before);
  let outputsCleared = false;
  const edited = editedAt.get(cell);
  if (isCode(cell) && edited && (edited.ran || (cell.executionCount ?? null) !== edited.count)) {
    cell.outputs.clear();
    cell.executionCount = null;
    outputsCleared = true;
  }
  editedAt.delete(cell);
  return { cell_id: cellId, source: cell.sharedModel.getSource(), outputs_cleared: outputsCleared };
}

/** The bridge ran (or wrote the outputs of) a cell: an edit's undo must clear them. */
function noteRun(cell: ICellModel): void {
  const edited = editedAt.get(cell);
  if (edited) edited.ran = true;
}

function insert(panel: NotebookPanel, args: Args): unknown {
  const source = stringArg(args, "source");
  const cellType = args.cell_type ?? "code";
  if (!CELL_TYPES.includes(cellType as (typeof CELL_TYPES)[number])) {
    throw new BridgeFailure("bad_request", `'cell_type' must be one of ${CELL_TYPES.join(", ")}`);
  }
  const after = args.after_cell_id ?? null;
  if (after !== null && typeof after !== "string") throw new BridgeFailure("bad_request", "'after_cell_id' must be a string or null");
  const index = after === null ? cells(panel).length : findCell(panel, after).index + 1;
  const notebook = panel.content.model;
  if (!notebook) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  let inserted = "";
  oneUndoStep(undoManagerOf(notebook.sharedModel), () => {
    inserted = notebook.sharedModel
      .insertCell(index, { cell_type: cellType as (typeof CELL_TYPES)[number], source, metadata: {} })
      .getId();
  });
  return { cell_id: inserted };
}

function remove(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const { cell, index } = findCell(panel, cellId);
  expectSource(cell, stringArg(args, "expected"));
  const notebook = panel.content.model;
  if (!notebook) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  oneUndoStep(undoManagerOf(notebook.sharedModel), () => notebook.sharedModel.deleteCell(index));
  return { cell_id: cellId };
}

function ranResult(cellId: string, cell: ICodeCellModel, status: "ok" | "error"): unknown {
  const budget = newBudget();
  const outputs = cell.outputs.toJSON().map((output) => boundOutput(output as Parameters<typeof boundOutput>[0], budget));
  return { cell_id: cellId, execution_count: cell.executionCount ?? null, outputs, status };
}

/** The notebook's own signals of a user's run (its toolbar's execution indicator and the
 * table of contents follow them); JupyterLab emits them from its private run path. */
interface Emitter<T> {
  emit(args: T): void;
}

function announce<T>(signal: unknown, args: T): void {
  const emitter = signal as Partial<Emitter<T>>;
  if (typeof emitter.emit === "function") emitter.emit(args);
}

/**
 * Runs a code cell as the user's Run does: through the notebook's cell executor (the one
 * JupyterLab's commands use), in the panel's kernel session, showing `[*]` and then its
 * execution count. Replies when the cell has finished; an exception raised by the code is
 * `status: "error"` with its traceback in the outputs. The focus stays where it is. With
 * `wait: false` it replies once the run is started, with the cell's state (`cell_status`
 * reads the rest).
 */
async function run(panel: NotebookPanel, args: Args, services: OpServices): Promise<unknown> {
  const wait = args.wait ?? true;
  if (typeof wait !== "boolean") throw new BridgeFailure("bad_request", "'wait' must be true or false");
  const cellId = stringArg(args, "cell_id");
  const { cell: model } = findCell(panel, cellId);
  const code = requireCode(model);
  const notebook = panel.content;
  const cell = notebook.widgets.find((widget: Cell) => widget.model.id === cellId);
  if (!cell || !notebook.model) throw new BridgeFailure("no_cell", `cell ${cellId} has no view in ${panel.context.path}`);
  const options: INotebookCellExecutor.IRunCellOptions = {
    cell,
    notebook: notebook.model,
    notebookConfig: notebook.notebookConfig,
    onCellExecuted: (result) => announce(NotebookActions.executed, { notebook, ...result }),
    onCellExecutionScheduled: (scheduled) => announce(NotebookActions.executionScheduled, { notebook, ...scheduled }),
    sessionContext: panel.sessionContext,
    sessionDialogs: services.sessionDialogs ?? undefined,
  };
  let ran: boolean;
  noteRun(code); // its outputs start to change now, whether or not the run ends well
  const start = () => (services.executor ? services.executor.runCell(options) : runCell(options));
  if (!wait) {
    // Not waited for: `cell_status` reads its state while it runs and once ended. The
    // answer goes first: the kernel asking handles its messages in order, and a cell's
    // code that runs before the answer reaches it would keep it from reading the answer.
    const started: Started = { began: false, ended: false, failure: null };
    startedRuns.set(code, started);
    // The kernel took it (`[*]` from a queued run shows no difference): running from now.
    const began = (_: unknown, change: { name: string; newValue: unknown }) => {
      if (change.name === "executionState" && change.newValue === "running") started.began = true;
    };
    code.stateChanged.connect(began);
    setTimeout(() => {
      start().finally(() => code.stateChanged.disconnect(began)).then(
        (done) => {
          started.ended = true;
          if (!done) started.failure = "it did not run (it was deleted, or the kernel restarted or is busy asking for input)";
        },
        (error: unknown) => {
          started.ended = true;
          if (!(error instanceof KernelError)) started.failure = String(error);
        },
      );
    }, START_AFTER_MS);
    return { cell_id: cellId, state: stateOf(code), execution_count: code.executionCount ?? null };
  }
  try {
    ran = await start();
  } catch (error) {
    if (error instanceof KernelError) return ranResult(cellId, code, "error");
    throw error;
  }
  if (!ran) throw new BridgeFailure("failed", `cell ${cellId} did not run (it was deleted, or the kernel restarted or is busy asking for input)`);
  return ranResult(cellId, code, "ok");
}

/** A run started without waiting for it (`run` with `wait: false`). */
interface Started {
  /** The page has marked the cell executing (`[*]`). */
  began: boolean;
  ended: boolean;
  /** Why it did not run to its end, when the page could not run it (not an error the
   * cell's code raised: that is in its outputs). */
  failure: string | null;
}

const startedRuns = new WeakMap<ICellModel, Started>();

/** Milliseconds between answering a `run` that is not waited for and starting it: the
 * answer's message leaves for the kernel before the cell's. */
const START_AFTER_MS = 200;

/** A code cell's state as `cell_status` names it: `running` while the page shows `[*]`
 * (JupyterLab shows a cell waiting for the kernel so too) or until a run started here has
 * ended, `queued` when such a run has not yet reached the cell executor, `idle` when it
 * has not run, else `done` or `error` (an error output). */
function stateOf(cell: ICodeCellModel): "idle" | "queued" | "running" | "done" | "error" {
  if (executing(cell)) return "running";
  const started = startedRuns.get(cell);
  if (started && !started.ended) return started.began ? "running" : "queued";
  const outputs = cell.outputs.toJSON();
  if (outputs.some((o) => o.output_type === "error")) return "error";
  if ((cell.executionCount ?? null) === null && outputs.length === 0) return "idle";
  return "done";
}

/** One code cell's state, execution count and outputs so far (bounded, as `read` bounds
 * them); `failure`: why a run started without waiting did not run, if it did not. */
function cellStatus(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const cell = requireCode(findCell(panel, cellId).cell);
  const budget = newBudget();
  const outputs = cell.outputs.toJSON().map((output) => boundOutput(output as Parameters<typeof boundOutput>[0], budget));
  const failure = startedRuns.get(cell)?.failure ?? null;
  return { cell_id: cellId, state: stateOf(cell), execution_count: cell.executionCount ?? null, outputs, failure };
}

/** Writes outputs the kernel produced itself (when it ran the code without the page) into
 * the cell, with the execution count; not a step of the undo history, as a run's are not. */
function setOutputs(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const outputs = args.outputs;
  if (!Array.isArray(outputs)) throw new BridgeFailure("bad_request", "'outputs' must be a list of nbformat outputs");
  const count = args.execution_count ?? null;
  if (count !== null && (typeof count !== "number" || !Number.isInteger(count))) {
    throw new BridgeFailure("bad_request", "'execution_count' must be an integer or null");
  }
  const cell = requireCode(findCell(panel, cellId).cell);
  // Each change reaches the shared model as a run's do (outside its undo history); one
  // enclosing transaction would hand the model its own changes back as remote ones.
  cell.outputs.clear();
  for (const output of outputs as nbformat.IOutput[]) cell.outputs.add(output);
  cell.executionCount = count as number | null;
  noteRun(cell);
  return ranResult(cellId, cell, outputs.some((o: nbformat.IOutput) => o.output_type === "error") ? "error" : "ok");
}

/** The kernel's own entry in one cell's metadata, read — and written, when the request
 * carries `value` (`null` removes it). The key must start with `neta_nb` (the kernel keeps
 * an `%%agent` cell's session id there): no other metadata of a cell is read or changed. */
function cellMetadata(panel: NotebookPanel, args: Args): unknown {
  const key = stringArg(args, "key");
  if (!/^neta_nb(\.[a-z_]+)?$/.test(key)) throw new BridgeFailure("bad_request", `'key' must be neta_nb or neta_nb.<name>, not ${JSON.stringify(key)}`);
  const { cell } = findCell(panel, stringArg(args, "cell_id"));
  if (Object.hasOwn(args, "value")) {
    if (args.value === null) cell.deleteMetadata(key);
    else cell.setMetadata(key, args.value);
  }
  return { value: cell.getMetadata(key) ?? null };
}

/** Where a cell is, as the notebook shows it: its position (1 the first) and execution
 * count — a card names the cell so (`[2]`) instead of by its id. */
function locate(panel: NotebookPanel, args: Args): unknown {
  const { cell, index } = findCell(panel, stringArg(args, "cell_id"));
  return { position: index + 1, execution_count: isCode(cell) ? (cell.executionCount ?? null) : null };
}

/** Scrolls the notebook to a cell and selects it (a click on a cell's name in a card). */
async function focus(panel: NotebookPanel, args: Args): Promise<unknown> {
  const place = locate(panel, args) as { position: number };
  const notebook = panel.content;
  const index = place.position - 1;
  notebook.mode = "command";
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  await notebook.scrollToItem(index, "center");
  return place;
}

function integerArg(args: Args, name: string): number {
  const value = args[name];
  if (typeof value !== "number" || !Number.isInteger(value)) throw new BridgeFailure("bad_request", `'${name}' must be an integer`);
  return value;
}

/** Moves a cell as the user's drag would: one step of the notebook's undo history (Ctrl+Z
 * in the notebook moves it back). Made only while the cell is where, and as, the proposal
 * showed it (`from_index`, `expected`); `to_index` counts from 0. */
function move(panel: NotebookPanel, args: Args): unknown {
  const cellId = stringArg(args, "cell_id");
  const to = integerArg(args, "to_index");
  const { cell, index } = findCell(panel, cellId);
  expectSource(cell, stringArg(args, "expected"));
  if (index !== integerArg(args, "from_index")) {
    throw new BridgeFailure("changed", `cell ${cellId} moved since it was read; read the notebook again`);
  }
  const notebook = panel.content.model;
  if (!notebook) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  if (to < 0 || to >= notebook.cells.length) {
    throw new BridgeFailure("bad_request", `'to_index' ${to} is out of range (the notebook has ${notebook.cells.length} cells)`);
  }
  oneUndoStep(undoManagerOf(notebook.sharedModel), () => notebook.sharedModel.moveCell(index, to));
  return { cell_id: cellId, from_index: index, to_index: to };
}

/** A Yjs undo manager's stack and capture time, as `apply_changes` joins a turn's sets. */
interface UndoStack extends UndoCapture {
  undoStack: unknown[];
  lastChange: number;
}

function topOf(manager: UndoStack | null | undefined): unknown {
  const stack = manager?.undoStack;
  return Array.isArray(stack) && stack.length ? stack[stack.length - 1] : undefined;
}

/** The last set `apply_changes` made in a notebook: its turn and its undo step. */
const madeSets = new WeakMap<object, { turn: string; step: unknown }>();

/** One change of a set reviewed together, as `apply_changes` takes it. */
interface Change {
  op: "edit" | "insert" | "delete" | "move";
  cell_id?: string;
  source?: string;
  expected?: string;
  cell_type?: (typeof CELL_TYPES)[number];
  after_cell_id?: string | null;
  to_index?: number;
}

function parseChange(value: unknown, n: number): Change {
  if (typeof value !== "object" || value === null) throw new BridgeFailure("bad_request", `change ${n} must be an object`);
  const change = value as Record<string, unknown>;
  const op = change.op;
  if (op !== "edit" && op !== "insert" && op !== "delete" && op !== "move") {
    throw new BridgeFailure("bad_request", `change ${n}: 'op' must be edit, insert, delete or move`);
  }
  if (op === "insert") {
    const cellType = change.cell_type ?? "code";
    if (!CELL_TYPES.includes(cellType as (typeof CELL_TYPES)[number])) throw new BridgeFailure("bad_request", `change ${n}: 'cell_type' must be one of ${CELL_TYPES.join(", ")}`);
    const after = change.after_cell_id ?? null;
    if (after !== null && typeof after !== "string") throw new BridgeFailure("bad_request", `change ${n}: 'after_cell_id' must be a string or null`);
    return { op, source: stringArg(change, "source"), cell_type: cellType as (typeof CELL_TYPES)[number], after_cell_id: after };
  }
  const checked: Change = { op, cell_id: stringArg(change, "cell_id"), expected: stringArg(change, "expected") };
  if (op === "edit") checked.source = stringArg(change, "source");
  if (op === "move") checked.to_index = integerArg(change, "to_index");
  return checked;
}

/** Where `change` acts in `list` (the cells' ids and texts as the changes before it left
 * them), which it then changes: a cell that is not there or holds another text refuses
 * the whole set. */
function rehearse(list: { id: string | null; source: string }[], change: Change): number {
  if (change.op === "insert") {
    const after = change.after_cell_id ?? null;
    const index = after === null ? list.length : list.findIndex((cell) => cell.id === after) + 1;
    if (index === 0) throw new BridgeFailure("no_cell", `no cell with id ${JSON.stringify(after)}`);
    list.splice(index, 0, { id: null, source: change.source ?? "" });
    return index;
  }
  const index = list.findIndex((cell) => cell.id === change.cell_id);
  if (index < 0) throw new BridgeFailure("no_cell", `no cell with id ${JSON.stringify(change.cell_id)}`);
  if (list[index].source !== change.expected) throw new BridgeFailure("changed", `cell ${change.cell_id} changed since it was read; read the notebook again`);
  if (change.op === "edit") list[index].source = change.source ?? "";
  else if (change.op === "delete") list.splice(index, 1);
  else {
    const to = Math.max(0, Math.min(change.to_index ?? 0, list.length - 1));
    list.splice(to, 0, ...list.splice(index, 1));
  }
  return index;
}

/**
 * The changes of a set the user reviewed together (`changes`, in order), made as one step
 * of the notebook's undo history: one Undo Cell Operation (Z in command mode) puts back
 * every text, removes the cells inserted and restores the ones deleted. With `turn`, a
 * set made after another of the same turn joins its step when that step is still the
 * last one (the user changed nothing in between): one undo takes back the turn's sets. Every change is
 * first checked on a copy of the cell list (`rehearse`), and none is made when one cannot
 * be. The texts are set in the notebook's name, so they are steps of its history rather
 * than of each cell's (a change's card offers its own Undo).
 */
function applyChanges(panel: NotebookPanel, args: Args): unknown {
  const turn = args.turn ?? "";
  if (typeof turn !== "string") throw new BridgeFailure("bad_request", "'turn' must be a string");
  const given = args.changes;
  if (!Array.isArray(given) || given.length === 0) throw new BridgeFailure("bad_request", "'changes' must be a list of changes");
  const changes = given.map(parseChange);
  const notebook = panel.content.model;
  if (!notebook) throw new BridgeFailure("failed", "the notebook has no model (it is closing)");
  const rehearsal = cells(panel).map((cell) => ({ id: cell.id as string | null, source: cell.sharedModel.getSource() }));
  for (const change of changes) rehearse(rehearsal, change);
  const shared = notebook.sharedModel;
  const results: { cell_id: string }[] = [];
  // One transaction each, in the notebook's name (so the notebook's history records even
  // the texts), made at once: its undo history merges changes within half a second into
  // one step. (One enclosing transaction would not do: the cell list the ops read is
  // brought up to date only when a transaction ends.)
  const manager = undoManagerOf(shared) as UndoStack | null | undefined;
  const earlier = turn ? madeSets.get(shared) : undefined;
  const joined = earlier !== undefined && earlier.turn === turn && topOf(manager) === earlier.step;
  const make = () => {
    for (const change of changes) {
      if (change.op === "insert") {
        const after = change.after_cell_id ?? null;
        const index = after === null ? notebook.cells.length : findCell(panel, after).index + 1;
        const made = shared.insertCell(index, { cell_type: change.cell_type ?? "code", source: change.source ?? "", metadata: {} });
        results.push({ cell_id: made.getId() });
        continue;
      }
      const { cell, index } = findCell(panel, change.cell_id ?? "");
      if (change.op === "edit") {
        shared.transact(() => cell.sharedModel.setSource(change.source ?? ""));
        if (isCode(cell)) editedAt.set(cell, { count: cell.executionCount ?? null, ran: false });
      } else if (change.op === "delete") {
        shared.deleteCell(index);
      } else {
        shared.moveCell(index, Math.max(0, Math.min(change.to_index ?? 0, notebook.cells.length - 1)));
      }
      results.push({ cell_id: change.cell_id ?? "" });
    }
  };
  if (joined && manager) {
    // The step of this turn's earlier set is still the last one: these changes join it,
    // so one undo takes back the turn's sets (Yjs merges a change made within its capture
    // time into the last step).
    manager.lastChange = Date.now();
    try {
      make();
    } finally {
      manager.stopCapturing();
    }
  } else {
    oneUndoStep(manager, make);
  }
  const step = topOf(manager);
  if (turn && step !== undefined) madeSets.set(shared, { turn, step });
  return { results };
}

/** Clears the outputs and execution count of one code cell (`cell_id`) or of all, as the
 * notebook's Clear Outputs does: not a step of the undo history (outputs never are). The
 * cell that shows the chat asking is left alone (its output is the chat). */
function clearOutputs(panel: NotebookPanel, args: Args, _services?: OpServices, target?: EventTarget | null): unknown {
  const cellId = args.cell_id ?? null;
  if (cellId !== null && typeof cellId !== "string") throw new BridgeFailure("bad_request", "'cell_id' must be a string or null");
  const chat = chatCellId(panel, target);
  if (cellId !== null && cellId === chat) throw new BridgeFailure("bad_request", `cell ${cellId} shows this chat: its output is the chat`);
  const chosen = cellId === null ? cells(panel).filter(isCode).filter((cell) => cell.id !== chat) : [requireCode(findCell(panel, cellId).cell)];
  for (const cell of chosen) cell.sharedModel.transact(() => cell.clearExecution(), false);
  return { cleared: chosen.map((cell) => cell.id) };
}

/** Runs the code cells named (`cell_ids`), in that order, each as `run` does, and stops
 * at the first that raises an error. Each cell's result carries its outputs only when it
 * failed (the model reads the notebook for the rest). */
async function runAll(panel: NotebookPanel, args: Args, services: OpServices): Promise<unknown> {
  const ids = args.cell_ids;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    throw new BridgeFailure("bad_request", "'cell_ids' must be a list of strings");
  }
  const results: Record<string, unknown>[] = [];
  for (const cellId of ids as string[]) {
    const result = (await run(panel, { cell_id: cellId }, services)) as Record<string, unknown>;
    const failed = result.status === "error";
    results.push(failed ? result : { ...result, outputs: undefined });
    if (failed) break;
  }
  return { results };
}

/** A code cell the kernel executes now (or has queued): its prompt shows `[*]`. */
function executing(cell: ICellModel): boolean {
  return isCode(cell) && (cell as ICodeCellModel & { executionState?: string }).executionState === "running";
}

function kernelOf(panel: NotebookPanel): { id: string; name: string; status: string; interrupt(): Promise<void> } {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) throw new BridgeFailure("failed", `${panel.context.path} has no kernel`);
  return kernel;
}

/** The notebook's kernel: its id, name, status and the cells it executes now. */
function kernelStatus(panel: NotebookPanel): unknown {
  const kernel = kernelOf(panel);
  return {
    kernel_id: kernel.id,
    name: kernel.name,
    status: kernel.status,
    executing: cells(panel).filter(executing).map((cell) => cell.id),
  };
}

/** Kernel ▸ Interrupt, without its menu. */
async function interrupt(panel: NotebookPanel): Promise<unknown> {
  const kernel = kernelOf(panel);
  const running = cells(panel).filter(executing).map((cell) => cell.id);
  await kernel.interrupt();
  return { kernel_id: kernel.id, executing: running };
}

/** Kernel ▸ Restart, without its dialog (the user approved it in the chat), `after_ms`
 * milliseconds after the answer: the kernel that asked gets it before it goes. */
function restart(panel: NotebookPanel, args: Args): unknown {
  const kernel = kernelOf(panel);
  const delay = args.after_ms ?? 0;
  if (typeof delay !== "number" || !(delay >= 0 && delay <= 60_000)) {
    throw new BridgeFailure("bad_request", "'after_ms' must be a number of milliseconds, 0 to 60000");
  }
  const context = panel.sessionContext;
  setTimeout(() => {
    context.restartKernel().catch((error: unknown) => console.warn("neta-nb: the kernel could not be restarted", error));
  }, delay);
  return { kernel_id: kernel.id };
}

export const OPS: Record<string, Op> = {
  read,
  cell_focus: (panel) => cellFocus(panel),
  notebooks,
  create,
  locate,
  focus,
  edit,
  insert,
  delete: remove,
  undo,
  run,
  cell_status: cellStatus,
  set_outputs: setOutputs,
  cell_metadata: cellMetadata,
  move,
  restore,
  apply_changes: applyChanges,
  clear_outputs: clearOutputs,
  run_all: runAll,
  kernel: kernelStatus,
  interrupt,
  restart,
  open_file: openFile,
};
