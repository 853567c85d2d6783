/**
 * Attachments in the chat (seed 002 §5.3/§9.2: the button sits in the input bar next to
 * the agent selector): a file picker and drag-and-drop onto the chat, chips with name,
 * size and a remove ×, and the limits shown on the button's tooltip and under the chips.
 *
 * Limits come from the kernel (the `attachment_limits` trait, neta_nb.attachments'
 * AttachmentLimits): a file over the per-file size, a set over the total or the count is
 * refused here, with a message, before anything is sent. What the model can take
 * (images need vision, PDFs a model that reads them) is the kernel's decision; its
 * refusal comes back as the send's error and the files stay in the tray.
 *
 * `attachmentChip` draws a file of a sent message in the transcript (with a thumbnail
 * for an image small enough to carry one).
 */
import "./attachments.css";
import type { ChatAttachment } from "./chat-view-traits";
import { element, svgIcon } from "../dom";
import { t, type Lang } from "../i18n";

export interface AttachmentLimits {
  max_file_bytes: number;
  max_total_bytes: number;
  max_count: number;
}

export const DEFAULT_LIMITS: AttachmentLimits = {
  max_file_bytes: 10 * 1024 * 1024,
  max_total_bytes: 20 * 1024 * 1024,
  max_count: 10,
};

/** `1.2 MB`, `340 KB`, `12 B`: the kernel's wording (neta_nb.attachments._size). */
export function formatBytes(count: number): string {
  if (count >= 1024 * 1024) return `${(count / (1024 * 1024)).toFixed(1)} MB`;
  return count >= 1024 ? `${Math.round(count / 1024)} KB` : `${count} B`;
}

const PAPERCLIP = ["M10.5 4.5 5.6 9.4a1.4 1.4 0 0 0 2 2l5.3-5.3a2.8 2.8 0 0 0-4-4L3.6 7.4a4.2 4.2 0 0 0 6 6l4.2-4.2"];
const FILE = ["M4 1.5h5.5L13 5v9.5H4z", "M9.5 1.5V5H13"];
const PICTURE = ["M2 3h12v10H2z", "m2 11 3.5-3.5 3 3 2-2L14 12", "M10.5 5.5h.01"];

function fileIcon(mediaType: string): SVGSVGElement {
  return svgIcon("neta-attachment-icon", mediaType.startsWith("image/") ? PICTURE : FILE);
}

/** One file of a sent message, as the transcript shows it. */
export function attachmentChip(file: ChatAttachment, lang: Lang): HTMLElement {
  const chip = element("span", "neta-attachment-chip");
  if (file.missing) {
    chip.classList.add("neta-is-missing");
    chip.title = t(lang, "output_missing");
  }
  if (file.thumbnail && file.media_type.startsWith("image/")) {
    const thumb = document.createElement("img");
    thumb.className = "neta-attachment-thumb";
    thumb.alt = "";
    thumb.src = `data:${file.media_type};base64,${file.thumbnail}`;
    chip.append(thumb);
  } else {
    chip.append(fileIcon(file.media_type));
  }
  chip.append(element("span", "neta-attachment-name", file.name), element("span", "neta-attachment-size", formatBytes(file.size)));
  return chip;
}

export interface AttachmentTray {
  /** The paperclip button (goes into the toolbar). */
  button: HTMLButtonElement;
  /** Chips and the limits line (goes above the textarea). */
  tray: HTMLDivElement;
  files(): File[];
  add(files: Iterable<File>): void;
  clear(): void;
  setLimits(limits: Partial<AttachmentLimits> | null | undefined): void;
  setDisabled(disabled: boolean): void;
  render(): void;
  destroy(): void;
}

export interface AttachmentTrayOptions {
  lang: () => Lang;
  /** Where drag-and-drop is accepted (the whole chat). */
  dropTarget: HTMLElement;
  /** A refusal to show (too large, too many); `null` clears it. */
  onRefuse: (message: string | null) => void;
  /** The set of files changed (the send button may become enabled). */
  onChange: () => void;
}

export function createAttachmentTray(options: AttachmentTrayOptions): AttachmentTray {
  const { lang, dropTarget } = options;
  let limits: AttachmentLimits = { ...DEFAULT_LIMITS };
  let files: File[] = [];
  let disabled = false;

  const button = element("button", "neta-chat-attach");
  button.type = "button";
  const picker = element("input", "neta-chat-attach-input");
  picker.type = "file";
  picker.multiple = true;
  picker.hidden = true;
  const tray = element("div", "neta-attachment-tray");
  const chips = element("div", "neta-attachment-chips");
  const limitsLine = element("div", "neta-attachment-limits");
  tray.append(chips, limitsLine, picker);
  const dropHint = element("div", "neta-chat-drop-hint");
  dropTarget.append(dropHint);

  function total(list: File[]): number {
    return list.reduce((sum, file) => sum + file.size, 0);
  }

  function add(incoming: Iterable<File>): void {
    const list = [...files];
    let refusal: string | null = null;
    for (const file of incoming) {
      if (file.size > limits.max_file_bytes) {
        refusal = t(lang(), "attachment_too_large", { name: file.name, size: formatBytes(file.size), limit: formatBytes(limits.max_file_bytes) });
        continue;
      }
      if (list.length >= limits.max_count) {
        refusal = t(lang(), "attachments_too_many", { count: limits.max_count });
        continue;
      }
      if (total(list) + file.size > limits.max_total_bytes) {
        refusal = t(lang(), "attachments_total_too_large", { size: formatBytes(total(list) + file.size), limit: formatBytes(limits.max_total_bytes) });
        continue;
      }
      list.push(file);
    }
    files = list;
    options.onRefuse(refusal);
    render();
    options.onChange();
  }

  function render(): void {
    const language = lang();
    const label = t(language, "attach_files");
    const limitText = t(language, "attachment_limits", { file: formatBytes(limits.max_file_bytes), total: formatBytes(limits.max_total_bytes) });
    if (!button.firstChild) button.append(svgIcon("neta-chat-attach-icon", PAPERCLIP));
    button.title = `${label} — ${limitText}`;
    button.setAttribute("aria-label", label);
    button.disabled = disabled;
    dropHint.textContent = t(language, "attachment_drop");
    tray.hidden = files.length === 0;
    limitsLine.textContent = `${formatBytes(total(files))} · ${limitText}`;
    chips.replaceChildren(
      ...files.map((file, index) => {
        const chip = attachmentChip({ name: file.name, media_type: file.type, size: file.size }, language);
        const remove = element("button", "neta-attachment-remove", "×");
        remove.type = "button";
        remove.setAttribute("aria-label", t(language, "attachment_remove", { name: file.name }));
        remove.title = remove.getAttribute("aria-label") ?? "";
        remove.addEventListener("click", () => {
          files = files.filter((_, position) => position !== index);
          options.onRefuse(null);
          render();
          options.onChange();
        });
        chip.append(remove);
        return chip;
      }),
    );
  }

  const onButton = () => picker.click();
  const onPicked = () => {
    if (picker.files) add(picker.files);
    picker.value = ""; // the same file may be picked again after a remove
  };
  const carriesFiles = (event: DragEvent) => Boolean(event.dataTransfer && [...event.dataTransfer.types].includes("Files"));
  let depth = 0;
  const onDragEnter = (event: DragEvent) => {
    if (disabled || !carriesFiles(event)) return;
    event.preventDefault();
    depth += 1;
    dropTarget.classList.add("neta-is-dropping");
  };
  const onDragOver = (event: DragEvent) => {
    if (disabled || !carriesFiles(event)) return;
    event.preventDefault(); // without it the browser opens the file instead
    if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
  };
  const onDragLeave = () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) dropTarget.classList.remove("neta-is-dropping");
  };
  const onDrop = (event: DragEvent) => {
    depth = 0;
    dropTarget.classList.remove("neta-is-dropping");
    if (disabled || !carriesFiles(event)) return;
    event.preventDefault();
    event.stopPropagation(); // JupyterLab would open a dropped file as a document
    if (event.dataTransfer?.files) add(event.dataTransfer.files);
  };
  button.addEventListener("click", onButton);
  picker.addEventListener("change", onPicked);
  dropTarget.addEventListener("dragenter", onDragEnter);
  dropTarget.addEventListener("dragover", onDragOver);
  dropTarget.addEventListener("dragleave", onDragLeave);
  dropTarget.addEventListener("drop", onDrop);
  render();

  return {
    button,
    tray,
    files: () => [...files],
    add,
    clear() {
      files = [];
      render();
    },
    setLimits(value) {
      if (value && typeof value === "object") {
        limits = {
          max_file_bytes: Number(value.max_file_bytes) || DEFAULT_LIMITS.max_file_bytes,
          max_total_bytes: Number(value.max_total_bytes) || DEFAULT_LIMITS.max_total_bytes,
          max_count: Number(value.max_count) || DEFAULT_LIMITS.max_count,
        };
      }
      render();
    },
    setDisabled(value) {
      disabled = value;
      button.disabled = value;
    },
    render,
    destroy() {
      button.removeEventListener("click", onButton);
      picker.removeEventListener("change", onPicked);
      dropTarget.removeEventListener("dragenter", onDragEnter);
      dropTarget.removeEventListener("dragover", onDragOver);
      dropTarget.removeEventListener("dragleave", onDragLeave);
      dropTarget.removeEventListener("drop", onDrop);
      dropHint.remove();
    },
  };
}
