/**
 * `open_file`: a file a chat's card names (an outside agent's call read or changed it),
 * opened in the page as the file browser opens it — JupyterLab's editor for a text file,
 * its viewer for the rest — at the line the call named. The page knows paths under the
 * server's root only; the card gives the file's path from the folder of the kernel's
 * notebook (`from_notebook`, which the kernel works out), and a path that leads out of the
 * server's root is refused with the reason, as is a file that is not there.
 */
import type { NotebookPanel } from "@jupyterlab/notebook";
import type { ContentsService, OpServices } from "./ops";
import { BridgeFailure } from "./protocol";

/** What opens a path under the server's root (`docmanager:open`); its widget, if any. */
export type FileOpener = (path: string) => Promise<unknown>;

/** `from` (a path from the folder of the notebook at `notebookPath`) as a path under the
 * server's root; null when it leads out of the root. */
export function underRoot(notebookPath: string, from: string): string | null {
  const parts = notebookPath.split("/").filter(Boolean).slice(0, -1);
  for (const part of from.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (!parts.length) return null;
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.length ? parts.join("/") : null;
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
  const from = args.from_notebook;
  if (typeof from !== "string" || !from) {
    throw new BridgeFailure("outside_root", `${path} cannot be placed under the server's root: the notebook's kernel was not started by this Jupyter server`);
  }
  const target = underRoot(panel.context.path, from);
  if (target === null) throw new BridgeFailure("outside_root", `${path} is outside the folder this Jupyter server serves: it cannot be opened here`);
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
