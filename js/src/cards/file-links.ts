/**
 * The files a tool call reads or changes — an outside agent reports them with the call
 * (`locations`) — as a line of links under the card's header: each file's name (and line),
 * its whole path in the tooltip. A click asks the notebook extension on the page to open
 * the file in JupyterLab's editor at that line (`open_file`); a file it cannot open (outside
 * the server's root, gone, no extension on the page) is marked so, and its tooltip says why.
 */
import "./cell-name.css";
import "./file-links.css";
import { element } from "../dom";
import { t, type Lang } from "../i18n";
import { askNotebook } from "./cell-name";

/** Python twin: `FileLocationDict` (widgets/chat/wire.py), `messages.FileLocation`'s dump. */
export interface FileLocation {
  path: string;
  line?: number | null;
  /** The absolute path of the kernel's notebook: how the page places the file under
   * the folder it serves (neta_nb/widgets/chat/drawing/render.py `linked_locations`). */
  notebook?: string;
}

/** What a link shows: the file's name, and `:line` when the call named one. */
export function fileLinkText(location: FileLocation): string {
  const name = location.path.split(/[\\/]/).filter(Boolean).pop() ?? location.path;
  return typeof location.line === "number" ? `${name}:${location.line}` : name;
}

function createFileLink(location: FileLocation, lang: Lang): HTMLButtonElement {
  const link = element("button", "neta-file-link", fileLinkText(location));
  link.type = "button";
  link.dataset.path = location.path;
  const where = typeof location.line === "number" ? `${location.path}:${location.line}` : location.path;
  link.title = t(lang, "file_link_hint", { path: where });
  link.addEventListener("click", (event) => {
    event.stopPropagation(); // not the card's own toggle
    const args: Record<string, unknown> = { path: location.path, notebook: location.notebook ?? null };
    if (typeof location.line === "number") args.line = location.line;
    void askNotebook(link, "open_file", args).then((reply) => {
      link.classList.toggle("neta-is-missing", !reply.ok);
      link.title = reply.ok ? t(lang, "file_link_hint", { path: where }) : `${where}\n${reply.error?.message ?? t(lang, "file_link_no_page")}`;
    });
  });
  return link;
}

/** Fill `line` with links to `locations` (emptied and hidden when there are none). */
export function setFileLinks(line: HTMLElement, locations: readonly FileLocation[], lang: Lang): void {
  line.replaceChildren(...locations.map((location) => createFileLink(location, lang)));
  line.hidden = locations.length === 0;
}
