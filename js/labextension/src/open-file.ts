/**
 * `open_file`: a file a chat's card names (an outside agent's call read or changed it),
 * opened in the page as the file browser opens it — JupyterLab's editor for a text file,
 * its viewer for the rest — at the line the call named. The page knows paths under the
 * folder the server serves, not that folder: the card gives the file's absolute path and
 * the absolute path of the kernel's notebook, whose end is this notebook's path under that
 * folder — so the rest is the folder. A notebook that is not the kernel's (moved or renamed
 * since its kernel started, or using another notebook's kernel) is refused with the
 * reason rather than guessed at, as is a file outside the folder or not there.
 */
import type { NotebookPanel } from "@jupyterlab/notebook";
import type { ContentsService, OpServices } from "./ops";
import { BridgeFailure } from "./protocol";

/** What opens a path under the server's root (`docmanager:open`); its widget, if any. */
export type FileOpener = (path: string) => Promise<unknown>;

/** Where `absolute` is under the folder the server serves, found from `notebook` (the
 * kernel's notebook's absolute path) and `notebookPath` (this page's notebook's path under
 * that folder): its path there, "outside" when it is not under it, "other" when the
 * kernel's notebook is not this page's. Either separator is read (a Windows server). */
export function underRoot(absolute: string, notebook: string, notebookPath: string): string | "outside" | "other" {
  const slashes = (path: string) => path.replace(/\\/g, "/");
  const mine = `/${notebookPath.replace(/^\/+/, "")}`;
  const kernels = slashes(notebook);
  if (!kernels.endsWith(mine)) return "other";
  const root = kernels.slice(0, -mine.length);
  const file = slashes(absolute);
  if (!file.startsWith(`${root}/`)) return "outside";
  const parts: string[] = [];
  for (const part of file.slice(root.length + 1).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (!parts.length) return "outside";
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.length ? parts.join("/") : "outside";
}

/** An opened editor, as far as the op needs it (a FileEditor's `CodeEditor.IEditor`). */
interface LineEditor {
  setCursorPosition(position: { line: number; column: number }): void;
  revealPosition?(position: { line: number; column: number }): void;
  focus?(): void;
}

function editorOf(widget: unknown): LineEditor | null {
  const editor = (widget as { content?: { editor?: Partial<LineEditor> } } | null)?.content?.editor;
  return editor && typeof editor.setCursorPosition === "function" ? (editor as LineEditor) : null;
}

async function exists(contents: ContentsService | null | undefined, path: string): Promise<string | null> {
  if (!contents) return null;
  try {
    return (await contents.get(path, { content: false })).type;
  } catch (error) {
    const status = (error as { response?: { status?: number } } | null)?.response?.status;
    if (status === 404) return "";
    throw error;
  }
}

export async function openFile(panel: NotebookPanel, args: Record<string, unknown>, services: OpServices): Promise<unknown> {
  const path = typeof args.path === "string" ? args.path : "";
  const notebook = args.notebook;
  if (!path || typeof notebook !== "string" || !notebook) {
    throw new BridgeFailure("outside_root", `${path} cannot be placed under the folder this Jupyter server serves: the notebook's kernel was not started by the server`);
  }
  const target = underRoot(path, notebook, panel.context.path);
  if (target === "other") {
    throw new BridgeFailure("outside_root", `${path} cannot be placed: this notebook is not the one its kernel was started for (${notebook}), moved or renamed since — restart the kernel to open files from here`);
  }
  if (target === "outside") throw new BridgeFailure("outside_root", `${path} is outside the folder this Jupyter server serves: it cannot be opened here`);
  const kind = await exists(services.contents, target);
  if (kind === "") throw new BridgeFailure("no_file", `there is no file at ${path} (any more)`);
  if (kind === "directory") throw new BridgeFailure("no_file", `${path} is a folder`);
  if (!services.openFile) throw new BridgeFailure("failed", "this page cannot open files");
  const widget = await services.openFile(target);
  const line = args.line;
  const editor = editorOf(widget);
  if (editor && typeof line === "number" && Number.isInteger(line) && line > 0) {
    await (widget as { context?: { ready?: Promise<void> } }).context?.ready;
    const position = { line: line - 1, column: 0 };
    editor.setCursorPosition(position);
    editor.revealPosition?.(position);
    editor.focus?.();
  }
  return { path: target };
}
