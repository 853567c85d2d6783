/**
 * What a tool displayed besides its text (neta_nb.messages.DisplayItem): figures and
 * images inline, HTML tables (a DataFrame's) sanitized and scrollable, markdown.
 *
 * Nothing here runs script or loads from the network: raster images and SVG are shown
 * through `<img>` with a `data:` URL (an SVG in an image runs no script and loads
 * nothing), HTML goes through the markdown sanitizer's rules (`renderSanitizedHtml`: no
 * <script>, <style>, event handlers or loading elements). An item whose stored file is
 * missing (resume after the blob was deleted) shows a placeholder.
 */
import "./rich-output.css";
import { element } from "./dom";
import { t, type Lang } from "./i18n";
import { renderSanitizedHtml, setMarkdown } from "./markdown";
import { CELL_EDIT_TYPE, createCellEditCard, parseProposal } from "./cards/cell-edit-card";
import { createChangesSummary, groupOf } from "./cards/changes-card";

export interface DisplayItem {
  /** The rest of the dump (Python: `DisplayItemDict`), unused here. */
  type?: "display";
  sha256?: string | null;
  size?: number;
  media_type: string;
  /** Base64 bytes of an image; null when its stored file is missing. */
  data: string | null;
  /** The text of an HTML, SVG or markdown item. */
  text?: string | null;
  width?: number;
  height?: number;
  name?: string | null;
  /** Left out of widget state for its size (the kernel keeps it). */
  omitted?: boolean;
}

const RASTER = /^image\/(?:png|jpeg|gif|webp)$/;

function asItems(value: unknown): DisplayItem[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (item): item is DisplayItem =>
      Boolean(item) && typeof item === "object" && typeof (item as DisplayItem).media_type === "string",
  );
}

/** A stable key for an item list: redraw only when it changed. */
function keyOf(items: DisplayItem[]): string {
  return items
    .map((i) => `${i.media_type}:${i.width ?? 0}x${i.height ?? 0}:${(i.data ?? i.text ?? "").length}:${(i.data ?? i.text ?? "").slice(0, 64)}`)
    .join("|");
}

function renderItem(item: DisplayItem, index: number, lang: Lang): HTMLElement {
  const kind = item.media_type;
  if (item.omitted) return element("div", "neta-output neta-output-missing", t(lang, "output_omitted"));
  if (RASTER.test(kind) || kind === "image/svg+xml") {
    const source = kind === "image/svg+xml" && item.text ? base64Text(item.text) : item.data;
    if (!source) return missing(lang);
    const figure = element("div", "neta-output neta-output-image");
    const image = document.createElement("img");
    image.alt = t(lang, "output_image_alt", { n: index + 1 });
    image.decoding = "async";
    image.src = `data:${kind};base64,${source}`;
    if (item.width && item.height) {
      // Reserve the box before the image decodes: no jump when it appears.
      image.width = item.width;
      image.height = item.height;
    }
    figure.append(image);
    return figure;
  }
  if (kind === "text/html") {
    const box = element("div", "neta-output neta-output-html");
    box.tabIndex = 0; // scrollable by keyboard
    box.replaceChildren(renderSanitizedHtml(item.text ?? ""));
    return box;
  }
  if (kind === CELL_EDIT_TYPE) {
    const proposal = parseProposal(item.text ?? "");
    if (!proposal) return missing(lang);
    // Undone on the page: the item says so, for when the message is drawn again.
    const onUndone = (outputsCleared: boolean) => {
      item.text = JSON.stringify({ ...proposal, decision: "undone", ...(outputsCleared ? { outputs_cleared: true } : {}) });
    };
    const card = createCellEditCard(proposal, { lang, onUndone });
    // The first change of a set reviewed together carries the set's summary: above it.
    const group = groupOf(proposal);
    if (!group?.changes) return card;
    const box = element("div", "neta-changes-decided");
    box.append(createChangesSummary(group, lang), card);
    return box;
  }
  if (kind === "text/markdown") {
    const box = element("div", "neta-output neta-output-markdown neta-markdown");
    setMarkdown(box, item.text ?? "");
    return box;
  }
  return missing(lang);
}

function base64Text(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function missing(lang: Lang): HTMLElement {
  return element("div", "neta-output neta-output-missing", t(lang, "output_missing"));
}

export interface RichOutput {
  node: HTMLElement;
  /** Draw `items` (any value: only well-formed items are used). */
  set(items: unknown, lang: Lang): void;
}

export function createRichOutput(): RichOutput {
  const node = element("div", "neta-outputs");
  node.hidden = true;
  let drawn = "";
  return {
    node,
    set(value, lang) {
      const items = asItems(value);
      const key = `${lang}#${keyOf(items)}`;
      if (key === drawn) return;
      drawn = key;
      node.hidden = items.length === 0;
      node.replaceChildren(...items.map((item, index) => renderItem(item, index, lang)));
    },
  };
}
