/**
 * The chat in a side panel: another view of the same widget model as a chat view in a
 * notebook's output, in the shell's right area (JupyterLab's right sidebar, Notebook 7's
 * right panel), where it stays on screen while the notebook scrolls.
 *
 * A chat view asks for it with a `neta-nb-side-panel` event (./protocol.ts) naming its
 * widget model (the kernel tells the view; without it, the model of the output holding the
 * view). The view is drawn by the notebook's own rendermime — the widget renderer of that
 * notebook's kernel — from a MIME model naming the widget model, so both views follow the
 * one model and are in sync without anything of ours in between. One side panel per
 * model: asked again, it is revealed. The panel remembers the notebook it came from: the
 * notebook bridge answers requests from inside it for that notebook.
 *
 * It closes (its view disposed, which announces `view_closed`) on its close button, when
 * the widget's view goes (the model closed), when the kernel restarts or changes, when the
 * notebook closes, and when the output it was opened from leaves its cell (the cell run
 * again, its outputs cleared, the cell deleted): never a dead view, nor one of a chat the
 * notebook no longer shows.
 */
import type { JupyterFrontEnd } from "@jupyterlab/application";
import type { ISessionContext } from "@jupyterlab/apputils";
import type { CodeCell, ICodeCellModel } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { MimeModel } from "@jupyterlab/rendermime";
import { LabIcon } from "@jupyterlab/ui-components";
import { Panel, Widget } from "@lumino/widgets";
import { BridgeFailure, WIDGET_VIEW_MIME } from "./protocol";

/** The class of a side panel's node (the chat view's stylesheet fits itself to it). */
export const SIDE_PANEL_CLASS = "neta-nb-side-panel";

const CHAT_ICON = new LabIcon({
  name: "neta-nb:chat",
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6v2h2V9H7zm4 0v2h2V9h-2zm4 0v2h2V9h-2z"/>' +
    "</svg>",
});

/** What a side panel's view is of: a widget model of one notebook's kernel. */
interface SideEntry {
  panel: ChatSidePanel;
  notebook: NotebookPanel;
  modelId: string;
}

/** Where a view was opened from: a cell, and the model id its widget output names (the
 * chat's own, or a box holding it). */
interface Origin {
  cell: ICodeCellModel;
  outputModelId: string;
}

function outputModelId(output: { data: Record<string, unknown> }): string | null {
  const data = output.data[WIDGET_VIEW_MIME] as { model_id?: unknown } | undefined;
  return typeof data?.model_id === "string" && data.model_id ? data.model_id : null;
}

/** The widget output holding `target` in `notebook`, or null. */
function originOf(notebook: NotebookPanel, target: Node): Origin | null {
  for (const cell of notebook.content.widgets) {
    if (cell.model.type !== "code" || !cell.node.contains(target)) continue;
    const area = (cell as CodeCell).outputArea;
    const index = area.widgets.findIndex((child) => child.node.contains(target));
    if (index < 0 || index >= area.model.length) return null;
    const id = outputModelId(area.model.get(index));
    return id ? { cell: cell.model as ICodeCellModel, outputModelId: id } : null;
  }
  return null;
}

/** Whether the cell still has the widget output the view was opened from. */
function stillShown(origin: Origin): boolean {
  const outputs = origin.cell.outputs;
  for (let i = 0; i < outputs.length; i++) {
    if (outputModelId(outputs.get(i)) === origin.outputModelId) return true;
  }
  return false;
}

class ChatSidePanel extends Panel {
  readonly closed = new Set<() => void>();

  constructor(notebook: NotebookPanel, modelId: string) {
    super();
    this.id = `neta-nb-chat-${modelId}`;
    this.addClass(SIDE_PANEL_CLASS);
    this.title.icon = CHAT_ICON;
    const name = notebook.context.path.split("/").pop() ?? notebook.context.path;
    this.title.caption = `Chat · ${name}`;
    const header = document.createElement("div");
    header.className = "neta-nb-side-panel-header";
    const label = document.createElement("span");
    label.className = "neta-nb-side-panel-title";
    label.textContent = name;
    label.title = notebook.context.path;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "neta-nb-side-panel-close jp-Button jp-mod-minimal";
    close.title = "Close the side panel";
    close.setAttribute("aria-label", close.title);
    close.textContent = "×";
    close.addEventListener("click", () => this.dispose());
    header.append(label, close);
    this.addWidget(new Widget({ node: header }));
  }

  dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    for (const callback of this.closed) callback();
  }
}

export class SidePanels {
  private readonly entries = new Map<string, SideEntry>();

  constructor(private readonly app: JupyterFrontEnd) {}

  /** The notebook a side panel holding `target` was opened from, or null. */
  notebookHolding(target: Node): NotebookPanel | null {
    return this.entryHolding(target)?.notebook ?? null;
  }

  private entryHolding(target: Node): SideEntry | null {
    for (const entry of this.entries.values()) {
      if (entry.panel.node.contains(target)) return entry;
    }
    return null;
  }

  /** The nodes of the side panels opened from `notebook`. */
  nodesOf(notebook: NotebookPanel): Element[] {
    return [...this.entries.values()].filter((entry) => entry.notebook === notebook && !entry.panel.isDisposed).map((entry) => entry.panel.node);
  }

  /** Whether `target` is inside one of the side panels. */
  holds(target: Node): boolean {
    return this.entryHolding(target) !== null;
  }

  /** The side panel of widget model `modelId` (null: the model of the output holding
   * `target`): revealed if it exists, else made. `notebook` is the notebook holding
   * `target` (null: `target` is in a side panel or in no notebook). */
  async open(target: Node, notebook: NotebookPanel | null, modelId: string | null): Promise<{ panel_id: string; created: boolean }> {
    const inside = this.entryHolding(target);
    if (inside) {
      this.reveal(inside);
      return { panel_id: inside.panel.id, created: false };
    }
    if (!notebook) throw new BridgeFailure("no_notebook", "the chat is not inside an open notebook");
    const origin = originOf(notebook, target);
    const id = modelId ?? origin?.outputModelId;
    if (!id) throw new BridgeFailure("failed", "the chat's output names no widget model");
    const known = this.entries.get(id);
    if (known && !known.panel.isDisposed) {
      this.reveal(known);
      return { panel_id: known.panel.id, created: false };
    }
    const entry = this.create(notebook, id, origin);
    return { panel_id: entry.panel.id, created: true };
  }

  /** Bring the side panel holding `target` on screen (its area expanded, it current). */
  revealHolding(target: Node): boolean {
    const entry = this.entryHolding(target);
    if (entry) this.reveal(entry);
    return entry !== null;
  }

  private reveal(entry: SideEntry): void {
    this.app.shell.activateById(entry.panel.id);
  }

  private create(notebook: NotebookPanel, modelId: string, origin: Origin | null): SideEntry {
    const panel = new ChatSidePanel(notebook, modelId);
    const entry: SideEntry = { panel, notebook, modelId };
    this.entries.set(modelId, entry);

    const renderer = notebook.content.rendermime.createRenderer(WIDGET_VIEW_MIME);
    renderer.addClass("neta-nb-side-panel-body");
    panel.addWidget(renderer);

    // A dead view is never left behind: the kernel restarts or changes, the notebook goes.
    const session: ISessionContext = notebook.sessionContext;
    const onStatus = (_: ISessionContext, status: string) => {
      if (status === "restarting" || status === "autorestarting" || status === "dead") panel.dispose();
    };
    const onKernel = () => panel.dispose();
    const onNotebookGone = () => panel.dispose();
    session.statusChanged.connect(onStatus);
    session.kernelChanged.connect(onKernel);
    notebook.disposed.connect(onNotebookGone);
    // The chat the cell shows is the one the panel shows: run again, cleared or deleted,
    // the panel goes with it.
    const onOutputs = () => {
      if (origin && !stillShown(origin)) panel.dispose();
    };
    const onCells = () => {
      const cells = notebook.content.model?.cells;
      if (origin && cells && !Array.from(cells).includes(origin.cell)) panel.dispose();
    };
    origin?.cell.outputs.changed.connect(onOutputs);
    notebook.content.model?.cells.changed.connect(onCells);
    panel.closed.add(() => {
      session.statusChanged.disconnect(onStatus);
      session.kernelChanged.disconnect(onKernel);
      notebook.disposed.disconnect(onNotebookGone);
      if (!origin?.cell.isDisposed) origin?.cell.outputs.changed.disconnect(onOutputs);
      notebook.content.model?.cells.changed.disconnect(onCells);
      if (this.entries.get(modelId) === entry) this.entries.delete(modelId);
    });

    this.app.shell.add(panel, "right", { rank: 1000 });
    this.app.shell.activateById(panel.id);
    const model = new MimeModel({ data: { [WIDGET_VIEW_MIME]: { model_id: modelId, version_major: 2, version_minor: 1 } } });
    renderer.renderModel(model).then(
      () => {
        // The model closed (its widget closed in the kernel): its view goes, the panel too.
        const view = (renderer as unknown as { widgets?: readonly Widget[] }).widgets?.[0];
        if (view) view.disposed.connect(() => panel.dispose());
      },
      (error: unknown) => {
        console.warn("neta-nb: the side panel's chat view did not render", error);
        panel.dispose();
      },
    );
    return entry;
  }
}
