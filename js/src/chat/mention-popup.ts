/**
 * The `@` popup of the chat input: what the kernel says can be mentioned (variables with
 * their type, recent cells, the last exception, files), as a listbox above the prompt box.
 * ↑/↓ move, Enter or Tab choose, Escape closes; the mouse chooses too. The prompt box keeps
 * the focus throughout (a combobox: `aria-activedescendant` names the active row).
 */
import "./mention-popup.css";
import { formatBytes } from "./attachments";
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

let popups = 0;

export function createMentionPopup(options: MentionPopupOptions): MentionPopup {
  const { lang, textarea } = options;
  popups += 1;
  const id = `neta-mention-popup-${popups}`;
  const root = element("div", "neta-mention-popup");
  const list = element("ul", "neta-mention-list");
  list.id = id;
  list.setAttribute("role", "listbox");
  const empty = element("div", "neta-mention-empty");
  root.append(list, empty);
  root.hidden = true;
  textarea.setAttribute("aria-autocomplete", "list");
  textarea.setAttribute("aria-controls", id);
  textarea.setAttribute("aria-expanded", "false");

  let candidates: MentionCandidate[] = [];
  let active = 0;

  function detail(candidate: MentionCandidate): string {
    if (candidate.kind === "error") return t(lang(), "mention_error_hint");
    if (candidate.key === "file:") return t(lang(), "mention_file_hint");
    if (candidate.kind === "file" && candidate.size !== null) return formatBytes(candidate.size);
    return candidate.detail;
  }

  function setActive(index: number): void {
    active = index;
    list.querySelectorAll<HTMLElement>(".neta-mention-option").forEach((row, position) => {
      const on = position === index;
      row.classList.toggle("neta-is-active", on);
      row.setAttribute("aria-selected", String(on));
      if (on) {
        textarea.setAttribute("aria-activedescendant", row.id);
        row.scrollIntoView({ block: "nearest" });
      }
    });
  }

  function show(prefix: string, found: MentionCandidate[]): void {
    candidates = found;
    const language = lang();
    list.setAttribute("aria-label", t(language, "mention_popup"));
    list.replaceChildren(
      ...found.map((candidate, index) => {
        const row = element("li", `neta-mention-option neta-mention-kind-${candidate.kind}`);
        row.id = `${id}-${index}`;
        row.setAttribute("role", "option");
        row.title = t(language, kindLabel(candidate.kind));
        row.append(mentionIcon(candidate.kind), element("span", "neta-mention-key", candidate.mention), element("span", "neta-mention-detail", detail(candidate)));
        return row;
      }),
    );
    empty.textContent = t(language, "mention_none", { prefix });
    empty.hidden = found.length > 0;
    list.hidden = found.length === 0;
    root.hidden = false;
    textarea.setAttribute("aria-expanded", String(found.length > 0));
    if (found.length) setActive(0);
    else textarea.removeAttribute("aria-activedescendant");
  }

  function hide(): void {
    root.hidden = true;
    candidates = [];
    textarea.setAttribute("aria-expanded", "false");
    textarea.removeAttribute("aria-activedescendant");
  }

  function rowIndex(event: Event): number {
    const row = (event.target as Element | null)?.closest(".neta-mention-option");
    return row ? [...list.children].indexOf(row) : -1;
  }
  // mousedown, not click: the prompt box must not lose the focus (nor the caret).
  const onMouseDown = (event: MouseEvent) => {
    event.preventDefault();
    const index = rowIndex(event);
    if (index >= 0) options.onChoose(candidates[index]);
  };
  const onMouseMove = (event: MouseEvent) => {
    const index = rowIndex(event);
    if (index >= 0 && index !== active) setActive(index);
  };
  root.addEventListener("mousedown", onMouseDown);
  root.addEventListener("mousemove", onMouseMove);

  return {
    root,
    get open() {
      return !root.hidden;
    },
    show,
    hide,
    handleKey(event) {
      if (root.hidden || event.isComposing) return false;
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        hide();
        options.onDismiss();
        return true;
      }
      if (!candidates.length) return false; // Enter sends, as without the popup
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        setActive((active + step + candidates.length) % candidates.length);
        return true;
      }
      if ((event.key === "Enter" && !event.shiftKey) || (event.key === "Tab" && !event.shiftKey)) {
        event.preventDefault();
        options.onChoose(candidates[active]);
        return true;
      }
      return false;
    },
    destroy() {
      root.removeEventListener("mousedown", onMouseDown);
      root.removeEventListener("mousemove", onMouseMove);
      root.remove();
    },
  };
}
