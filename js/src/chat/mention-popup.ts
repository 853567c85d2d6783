/**
 * The `@` popup of the chat input: what the kernel says can be mentioned (variables with
 * their type, recent cells, the last exception, files, the page's cells), in the prompt
 * box's listbox (./listbox-popup.ts: keys, mouse and focus are its).
 */
import "./mention-popup.css";
import { formatBytes } from "./attachments";
import { createListboxPopup } from "./listbox-popup";
import type { MentionCandidate } from "./mention-source";
import { element, svgIcon } from "../dom";
import { t, type Lang, type MessageKey } from "../i18n";

const ICONS: Record<MentionCandidate["kind"], string[]> = {
  variable: [
    "M6 2.5c-1.4 0-2 .6-2 2v1.6c0 .8-.5 1.4-1.5 1.4v1c1 0 1.5.6 1.5 1.4v1.6c0 1.4.6 2 2 2",
    "M10 2.5c1.4 0 2 .6 2 2v1.6c0 .8.5 1.4 1.5 1.4v1c-1 0-1.5.6-1.5 1.4v1.6c0 1.4-.6 2-2 2",
  ],
  cell: ["M5.5 2.5H3v11h2.5", "M10.5 2.5H13v11h-2.5"],
  error: ["M8 2 14.5 13.5h-13z", "M8 6.5V10", "M8 12v.01"],
  file: ["M4 1.5h5.5L13 5v9.5H4z", "M9.5 1.5V5H13"],
  folder: ["M1.5 3.5h5l1.5 1.5h6.5v8.5h-13z"],
};

/** The icon of a kind of mention (the chips use it too). */
export function mentionIcon(kind: MentionCandidate["kind"] | "notebook"): SVGSVGElement {
  // A notebook mention (`@this`, `@cells[…]`, `@cell:<id>`) names cells of the page.
  return svgIcon("neta-mention-icon", ICONS[kind === "notebook" ? "cell" : kind] ?? ICONS.variable);
}

export function kindLabel(kind: string): MessageKey {
  return kind === "cell" || kind === "notebook" ? "mention_kind_cell" : kind === "error" ? "mention_kind_error" : kind === "file" ? "mention_kind_file" : kind === "folder" ? "mention_kind_folder" : "mention_kind_variable";
}

export interface MentionPopup {
  root: HTMLElement;
  readonly open: boolean;
  /** Show `candidates` for what was typed after the `@` (none: a line saying so). */
  show(prefix: string, candidates: MentionCandidate[]): void;
  hide(): void;
  /** A key pressed in the prompt box: true when it was the popup's (it acted on it). */
  handleKey(event: KeyboardEvent): boolean;
  destroy(): void;
}

export interface MentionPopupOptions {
  lang: () => Lang;
  /** The prompt box the popup completes. */
  textarea: HTMLTextAreaElement;
  onChoose(candidate: MentionCandidate): void;
  /** Escape closed it: it stays closed until the mention being typed changes. */
  onDismiss(): void;
}

export function createMentionPopup(options: MentionPopupOptions): MentionPopup {
  const { lang } = options;

  function detail(candidate: MentionCandidate): string {
    if (candidate.kind === "error") return t(lang(), "mention_error_hint");
    if (candidate.key === "file:") return t(lang(), "mention_file_hint");
    if (candidate.key === "this") return t(lang(), "mention_this_hint");
    if (candidate.key.startsWith("cells[")) return t(lang(), "mention_cells_hint");
    if (candidate.kind === "file" && candidate.size !== null) return formatBytes(candidate.size);
    return candidate.detail;
  }

  const listbox = createListboxPopup<MentionCandidate>({
    textarea: options.textarea,
    name: "neta-mention",
    rootClass: "neta-mention-popup",
    row(candidate, row) {
      row.classList.add(`neta-mention-kind-${candidate.kind}`);
      row.title = t(lang(), kindLabel(candidate.kind));
      row.append(mentionIcon(candidate.kind), element("span", "neta-listbox-key neta-mention-key", candidate.mention), element("span", "neta-listbox-detail neta-mention-detail", detail(candidate)));
    },
    onChoose: options.onChoose,
    onDismiss: options.onDismiss,
  });

  return {
    root: listbox.root,
    get open() {
      return listbox.open;
    },
    show(prefix, candidates) {
      listbox.show(candidates, t(lang(), "mention_popup"), t(lang(), "mention_none", { prefix }));
    },
    hide: listbox.hide,
    handleKey: listbox.handleKey,
    destroy: listbox.destroy,
  };
}
