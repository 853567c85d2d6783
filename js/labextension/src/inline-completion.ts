/**
 * Inline completion from the kernel: JupyterLab's inline completer (ghost text; Tab
 * accepts, Esc dismisses, Alt+] / Alt+[ cycle) asks a notebook's kernel once the kernel
 * switched it on with `neta_nb.inline_completion(...)`
 * (neta_nb/runtime/inline_completion/link.py).
 *
 * The kernel opens a comm (target {@link COMM_TARGET}) carrying its settings; while that
 * comm is open, this provider answers in that kernel's notebook: after `debounce_ms` of no
 * typing it sends a `complete` request — the cell's text before and after the cursor, the
 * code cells above it, the cell's last error — and shows the text the kernel streams
 * back (`chunk` messages, then `done` or `error`). A newer request of the same notebook
 * supersedes the one in flight (a `cancel` goes to the kernel, which aborts the model's
 * HTTP request), so at most one is in flight per notebook and a stale suggestion is never
 * shown. Errors show as the ghost text's quiet error mark (its title says why), never a
 * dialog (the answers' bookkeeping: ./inline-link.ts). Closing the comm (`.off()`) stops it. The user setting `enabled` of
 * `neta-nb-notebook-bridge:inline-completion` turns it off whatever a kernel says.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import {
  type CompletionHandler,
  ICompletionProviderManager,
  type IInlineCompletionContext,
  type IInlineCompletionItem,
  type IInlineCompletionList,
  type IInlineCompletionProvider,
  InlineCompletionTriggerKind,
} from "@jupyterlab/completer";
import { INotebookTracker, NotebookPanel } from "@jupyterlab/notebook";
import type { Kernel, KernelMessage } from "@jupyterlab/services";
import { ISettingRegistry } from "@jupyterlab/settingregistry";
import { type Answer, type CellOutputs, COMM_TARGET, cellError, KernelLink, type LinkSettings, type SubshellComm, sleep, subshellReady } from "./inline-link";

/** The provider's identifier (the ghost text's `data-provider`, its settings key). */
export const PROVIDER_ID = "neta-nb:kernel";
const PLUGIN_ID = "neta-nb-notebook-bridge:inline-completion";
/** Previous code cells a request carries at most (the kernel bounds their text). */
const MAX_CELLS = 20;
const MAX_CELL_CHARS = 3000;

export class KernelInlineProvider implements IInlineCompletionProvider {
  readonly name = "neta_nb (from the kernel)";
  readonly identifier = PROVIDER_ID;
  // JupyterLab's own debounce stays 0: the kernel's `debounce_ms` is applied here.
  readonly schema = { default: { debouncerDelay: 0, timeout: 20000 } };
  /** The user setting: false turns completion off whatever a kernel says. */
  enabled = true;
  private readonly links = new Map<string, KernelLink>();
  private readonly latest = new Map<string, { seq: number; link: KernelLink; id: string | null }>();
  private readonly streams = new Map<string, Answer>();
  private counter = 0;

  /** The kernel `kernel` switched completion on (`settings`) over `comm`. */
  connect(kernel: Kernel.IKernelConnection, comm: Kernel.IComm, settings: LinkSettings): void {
    const link = new KernelLink(comm, settings, subshellReady(kernel, comm as unknown as SubshellComm));
    this.links.get(kernel.id)?.close();
    this.links.set(kernel.id, link);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => link.receive(msg.content.data as Record<string, unknown>);
    comm.onClose = () => {
      link.close();
      if (this.links.get(kernel.id) === link) this.links.delete(kernel.id);
    };
  }

  /** The kernel `id` is gone (restarted, shut down). */
  disconnect(id: string): void {
    this.links.get(id)?.close();
    this.links.delete(id);
  }

  async fetch(request: CompletionHandler.IRequest, context: IInlineCompletionContext): Promise<IInlineCompletionList> {
    const none: IInlineCompletionList = { items: [] };
    const widget = context.widget;
    if (!this.enabled || !(widget instanceof NotebookPanel)) return none;
    const kernel = widget.sessionContext.session?.kernel;
    const link = kernel ? this.links.get(kernel.id) : undefined;
    const cell = widget.content.activeCell;
    if (!link || link.comm.isDisposed || !cell) return none;
    const type = cell.model.type;
    if (type !== "code" && !(type === "markdown" && link.settings.markdown)) return none;

    // This request supersedes the notebook's previous one: cancelled now, never shown.
    const key = widget.id;
    const previous = this.latest.get(key);
    if (previous?.id) previous.link.cancel(previous.id);
    const mine = { seq: (previous?.seq ?? 0) + 1, link, id: null as string | null };
    this.latest.set(key, mine);
    const current = () => this.latest.get(key) === mine;
    if (context.triggerKind === InlineCompletionTriggerKind.Automatic && link.settings.debounce_ms > 0) {
      await sleep(link.settings.debounce_ms);
      if (!current()) return none;
    }
    await link.ready; // on the comm's subshell, where there is one: answered while a cell runs
    if (!current() || link.comm.isDisposed) return none;

    const index = widget.content.activeCellIndex;
    const cells = widget.content.widgets
      .slice(0, index)
      .filter((other) => other.model.type === "code")
      .slice(-MAX_CELLS)
      .map((other) => other.model.sharedModel.getSource().slice(-MAX_CELL_CHARS));
    const outputs = type === "code" ? (cell.model as unknown as { outputs?: CellOutputs }).outputs : undefined;
    const language = type === "markdown" ? "markdown" : ((widget.model?.getMetadata("language_info") as { name?: string } | undefined)?.name ?? "python");
    const id = `${key}:${mine.seq}:${++this.counter}`;
    mine.id = id;
    const answer = link.ask(id, {
      prefix: request.text.slice(0, request.offset),
      suffix: request.text.slice(request.offset),
      cells,
      error: outputs ? cellError(outputs) : "",
      language,
    });
    while (!answer.text && !answer.done && !answer.cancelled) await answer.changed();
    if (!current() || answer.cancelled) {
      link.cancel(id);
      return none;
    }
    if (answer.error) {
      console.warn(`neta_nb inline completion: ${answer.error}`);
      return { items: [{ insertText: "", error: { message: answer.error } }] };
    }
    if (!answer.text) return none;
    const item: IInlineCompletionItem = { insertText: answer.text, isIncomplete: !answer.done };
    if (!answer.done) {
      item.token = id;
      this.streams.set(id, answer);
    }
    return { items: [item] };
  }

  async *stream(token: string): AsyncGenerator<{ response: IInlineCompletionItem }> {
    const answer = this.streams.get(token);
    this.streams.delete(token);
    if (!answer) return;
    let shown = answer.text;
    while (!answer.done && !answer.cancelled) {
      await answer.changed();
      if (answer.cancelled) break;
      if (answer.text !== shown || answer.done) {
        shown = answer.text;
        const response: IInlineCompletionItem = { insertText: shown, isIncomplete: !answer.done };
        if (answer.error) response.error = { message: answer.error };
        yield { response };
      }
    }
  }
}

function followKernels(tracker: INotebookTracker, provider: KernelInlineProvider): void {
  const registered = new WeakSet<Kernel.IKernelConnection>();
  const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
    if (!kernel || registered.has(kernel)) return;
    registered.add(kernel);
    kernel.registerCommTarget(COMM_TARGET, (comm, msg) => {
      const data = msg.content.data as Partial<LinkSettings>;
      provider.connect(kernel, comm, {
        debounce_ms: typeof data.debounce_ms === "number" ? data.debounce_ms : 250,
        max_tokens: typeof data.max_tokens === "number" ? data.max_tokens : 64,
        markdown: data.markdown === true,
        model: typeof data.model === "string" ? data.model : "",
      });
    });
    kernel.disposed.connect(() => provider.disconnect(kernel.id));
  };
  const watch = (panel: NotebookPanel) => {
    register(panel.sessionContext.session?.kernel);
    panel.sessionContext.kernelChanged.connect((_, change) => {
      if (change.oldValue) provider.disconnect(change.oldValue.id);
      register(change.newValue);
    });
  };
  tracker.widgetAdded.connect((_, panel) => watch(panel));
  tracker.forEach(watch);
}

function activate(
  _app: JupyterFrontEnd,
  manager: ICompletionProviderManager | null,
  tracker: INotebookTracker | null,
  settings: ISettingRegistry | null,
): void {
  if (!manager || !tracker) return; // a page without notebooks or without the completer
  const provider = new KernelInlineProvider();
  manager.registerInlineProvider(provider);
  followKernels(tracker, provider);
  settings
    ?.load(PLUGIN_ID)
    .then((loaded) => {
      const apply = () => {
        provider.enabled = loaded.get("enabled").composite !== false;
      };
      apply();
      loaded.changed.connect(apply);
    })
    .catch((error: unknown) => console.warn(`${PLUGIN_ID}: its settings could not be read`, error));
  document.body.dataset.netaNbInlineCompletion = "ready";
}

export const inlineCompletionPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "Inline code completion in notebooks from the kernel, once it is switched on with neta_nb.inline_completion().",
  autoStart: true,
  optional: [ICompletionProviderManager, INotebookTracker, ISettingRegistry],
  activate,
};
