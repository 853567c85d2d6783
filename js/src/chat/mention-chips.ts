/**
 * The chips of the chat input's `@` mentions: one per mention in the prompt, with what the
 * kernel resolved it to (`mention_preview`: a type and size, a cell's first line…); a chip
 * opens the exact block the model will read. A mention the kernel does not know is marked
 * as such, and `check` names it before a send, which is then refused.
 *
 * Previews are cached by the mention as typed and forgotten when the prompt box gains the
 * focus again (cells may have run meanwhile) and after a send.
 */
import { formatBytes } from "./attachments";
import { findMentions, type FoundMention } from "./mention-parse";
import { kindLabel, mentionIcon } from "./mention-popup";
import type { MentionPreview } from "./mention-source";
import { element } from "../dom";
import { t, type Lang } from "../i18n";

/** Milliseconds of quiet typing before the kernel is asked about new mentions. */
const PREVIEW_DELAY_MS = 250;

interface Entry {
  state: "pending" | "ok" | "unknown" | "failed";
  preview: MentionPreview | null;
  settled: Promise<void>;
}

export interface MentionChips {
  /** The chips and the opened block (goes above the prompt box). */
  root: HTMLElement;
  /** The prompt changed: chips for its mentions, except one starting at `typing` (being
   * typed, its popup open). */
  update(text: string, typing: number | null): void;
  /** Forget what the kernel said (the notebook may have changed since). */
  invalidate(): void;
  /** Before a send: the kernel's word on every mention of `text` (waiting for those in
   * flight); a message naming the unknown ones, or null. */
  check(text: string): Promise<string | null>;
  /** Draw again (the language changed); the view is not told. */
  render(): void;
  destroy(): void;
}

export interface MentionChipsOptions {
  lang: () => Lang;
  /** Ask the kernel for a preview; null when no kernel answers. */
  preview(mention: string): Promise<MentionPreview> | null;
  /** The chips changed size. */
  onChange(): void;
}

let trays = 0;

export function createMentionChips(options: MentionChipsOptions): MentionChips {
  const { lang } = options;
  const root = element("div", "neta-mention-tray");
  const chips = element("div", "neta-mention-chips");
  const block = element("div", "neta-mention-block");
  const blockTitle = element("div", "neta-mention-block-title");
  const blockText = element("pre", "neta-mention-block-text");
  block.append(blockTitle, blockText);
  block.hidden = true;
  trays += 1;
  block.id = `neta-mention-block-${trays}`;
  root.append(chips, block);
  root.hidden = true;

  const cache = new Map<string, Entry>();
  let shown: { typed: string; mention: FoundMention }[] = [];
  let opened: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let available = true;

  /** The distinct mentions of `text` as typed (the first of each canonical name). */
  function distinct(text: string, skip: number | null): { typed: string; mention: FoundMention }[] {
    const seen = new Set<string>();
    const result = [];
    for (const mention of findMentions(text)) {
      if (mention.start === skip || seen.has(mention.name)) continue;
      seen.add(mention.name);
      result.push({ typed: text.slice(mention.start, mention.end), mention });
    }
    return result;
  }

  function ask(typed: string): Entry | null {
    const known = cache.get(typed);
    if (known) return known;
    const reply = available ? options.preview(typed) : null;
    if (reply === null) {
      available = false;
      return null;
    }
    const entry: Entry = { state: "pending", preview: null, settled: Promise.resolve() };
    entry.settled = reply.then(
      (preview) => {
        entry.preview = preview;
        entry.state = preview.ok ? "ok" : "unknown";
      },
      () => {
        entry.state = "failed"; // no word from the kernel: it decides at send time
      },
    ).then(() => {
      if (cache.get(typed) === entry) render();
    });
    cache.set(typed, entry);
    return entry;
  }

  function summary(entry: Entry | undefined): string {
    const language = lang();
    if (!entry || entry.state === "pending") return t(language, "mention_checking");
    if (entry.state === "unknown") return t(language, "mention_unknown");
    if (entry.state === "failed" || !entry.preview) return "";
    const size = entry.preview.size;
    return [entry.preview.summary ?? "", size === undefined ? "" : formatBytes(size)].filter(Boolean).join(", ");
  }

  /** One chip per mention, kept from one drawing to the next: a chip redrawn under the
   * pointer between mousedown and mouseup would never get its click (the prompt box's
   * blur redraws them). */
  const drawn = new Map<string, HTMLButtonElement>();

  function chipFor(name: string): HTMLButtonElement {
    let chip = drawn.get(name);
    if (!chip) {
      chip = element("button", "neta-mention-chip");
      chip.type = "button";
      chip.dataset.mention = name;
      chip.setAttribute("aria-controls", block.id);
      chip.addEventListener("click", () => {
        opened = opened === name ? null : name;
        render();
      });
      drawn.set(name, chip);
    }
    return chip;
  }

  /** Draw the chips; `notify`: tell the view they changed (not when it asked for this). */
  function render(notify = true): void {
    const language = lang();
    root.hidden = shown.length === 0 || !available;
    const wanted = new Set(shown.map(({ mention }) => mention.name));
    for (const [name, chip] of drawn) {
      if (!wanted.has(name)) {
        chip.remove();
        drawn.delete(name);
      }
    }
    shown.forEach(({ typed, mention }, index) => {
      const entry = cache.get(typed);
      const chip = chipFor(mention.name);
      chip.classList.toggle("neta-is-unknown", entry?.state === "unknown");
      chip.classList.toggle("neta-is-pending", !entry || entry.state === "pending");
      chip.setAttribute("aria-expanded", String(opened === mention.name));
      chip.title =
        entry?.state === "unknown" ? (entry.preview?.problem ?? t(language, "mention_unknown")) : t(language, "mention_show", { mention: mention.name });
      const { kind } = mention;
      const words = summary(entry);
      if (chip.dataset.words !== words || !chip.firstChild) {
        chip.dataset.words = words;
        chip.replaceChildren(mentionIcon(kind), element("span", "neta-mention-chip-name", mention.name));
        if (words) chip.append(element("span", "neta-mention-chip-summary", words));
      }
      chip.setAttribute("aria-label", `${t(language, kindLabel(kind))} ${mention.name}${words ? `: ${words}` : ""}`);
      if (chips.children[index] !== chip) chips.insertBefore(chip, chips.children[index] ?? null);
    });
    const open = shown.find(({ mention }) => mention.name === opened);
    const entry = open ? cache.get(open.typed) : undefined;
    const text = entry?.state === "ok" ? entry.preview?.rendering : entry?.state === "unknown" ? entry.preview?.problem : undefined;
    block.hidden = text === undefined;
    block.classList.toggle("neta-is-unknown", entry?.state === "unknown");
    if (open && text !== undefined) {
      blockTitle.textContent = t(language, "mention_show", { mention: open.mention.name });
      blockText.textContent = text;
    }
    if (notify) options.onChange();
  }

  return {
    root,
    update(text, typing) {
      shown = available ? distinct(text, typing) : [];
      if (opened !== null && !shown.some(({ mention }) => mention.name === opened)) opened = null;
      clearTimeout(timer);
      if (shown.some(({ typed }) => !cache.has(typed))) {
        timer = setTimeout(() => {
          for (const { typed } of shown) ask(typed);
          render();
        }, PREVIEW_DELAY_MS);
      }
      render();
    },
    invalidate() {
      cache.clear();
      available = true;
    },
    async check(text) {
      const all = distinct(text, null);
      const entries = all.map(({ typed }) => ask(typed));
      if (entries.some((entry) => entry === null)) return null;
      await Promise.all(entries.map((entry) => entry?.settled));
      shown = all;
      render();
      const unknown = all.filter(({ typed }) => cache.get(typed)?.state === "unknown").map(({ mention }) => mention.name);
      return unknown.length ? t(lang(), "mentions_refused", { mentions: unknown.join(", ") }) : null;
    },
    render: () => render(false),
    destroy() {
      clearTimeout(timer);
      root.remove();
    },
  };
}
