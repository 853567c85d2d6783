/**
 * `@` mentions in the chat input: the parser, twin of `find_mentions` in
 * neta_nb/runtime/mentions/mentions.py (the rules are written out there) and tested with the same
 * vectors (tests/fixtures/mention_vectors.json). The kernel decides what a mention refers
 * to; this finds where mentions are, for the chips, and the one being typed, for the popup.
 *
 * Offsets are the string's own (UTF-16 units), as the textarea's selection counts them.
 */

export type MentionKind = "variable" | "cell" | "error" | "file" | "notebook";

export interface FoundMention {
  kind: MentionKind;
  /** The variable's name, the cell's number, `error`, the file's path, or of the notebook's
   * cells `this`, `cells[3:5]` or `cell:<id>` (read from the page when sent). */
  target: string;
  /** The mention written canonically: `@df`, `@In[5]`, `@file:"a b.csv"`. */
  name: string;
  start: number;
  end: number;
}

const OPENERS = new Set([..."([{<\"'“‘（【「『《"]);
// A name is Python's `[^\W\d]\w*`: a letter, a number that is not a digit, or `_`, then
// letters, numbers and `_`.
const MENTION = /@(?:In\[([0-9]{1,9})\]|cells\[([^\]\n]{0,40})\]|cell:([A-Za-z0-9_-]{1,64})(?![\p{L}\p{N}_-])|file:(?:"([^"\n]+)"|([^\s"]+))|([\p{L}\p{Nl}\p{No}_][\p{L}\p{N}_]*))/gu;
const CODE = /(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g;
const PATH_END = new Set([...".,;:!?)]}>'\"。，；：！？）】」』》”’"]);
const SPACE = /\s/u;

function canonical(kind: MentionKind, target: string): string {
  if (kind === "cell") return `@In[${target}]`;
  if (kind === "file") return SPACE.test(target) ? `@file:"${target}"` : `@file:${target}`;
  return `@${target}`;
}

/** Whether an `@` at `index` may start a mention: at the start, after whitespace or an
 * opening bracket or quote. */
function startsMention(text: string, index: number): boolean {
  if (index === 0) return true;
  const before = text[index - 1];
  return SPACE.test(before) || OPENERS.has(before);
}

/** The spans of code (between a run of backticks and the next run of the same length). */
function codeSpans(text: string): [number, number][] {
  if (!text.includes("`")) return [];
  return [...text.matchAll(CODE)].map((match) => [match.index, match.index + match[0].length]);
}

function inside(spans: [number, number][], index: number): boolean {
  return spans.some(([left, right]) => left <= index && index < right);
}

/** The mentions in `text`, in order. */
export function findMentions(text: string): FoundMention[] {
  if (!text.includes("@")) return [];
  const code = codeSpans(text);
  const found: FoundMention[] = [];
  for (const match of text.matchAll(MENTION)) {
    const start = match.index;
    if (!startsMention(text, start) || inside(code, start)) continue;
    let end = start + match[0].length;
    const [, cell, slice, cellId, quoted, path, name] = match;
    let kind: MentionKind;
    let target: string;
    if (cell !== undefined) {
      kind = "cell";
      target = String(Number(cell));
    } else if (slice !== undefined) {
      kind = "notebook";
      target = `cells[${slice.replace(/\s+/gu, "")}]`;
    } else if (cellId !== undefined) {
      kind = "notebook";
      target = `cell:${cellId}`;
    } else if (quoted !== undefined) {
      kind = "file";
      target = quoted;
    } else if (path !== undefined) {
      let cut = path.length;
      while (cut > 0 && PATH_END.has(path[cut - 1])) cut -= 1;
      if (cut === 0) continue;
      kind = "file";
      target = path.slice(0, cut);
      end -= path.length - cut;
    } else if ((name === "file" || name === "cell") && text.startsWith(":", end)) {
      continue; // `@file:` with no path yet, `@cell:` with no id
    } else {
      kind = name === "error" ? "error" : name === "this" ? "notebook" : "variable";
      target = name;
    }
    found.push({ kind, target, name: canonical(kind, target), start, end });
  }
  return found;
}

export interface TypedMention {
  /** Where its `@` is. */
  start: number;
  /** What follows the `@` up to the caret (a quoted path without its quote's end). */
  prefix: string;
}

const TYPING = /@(file:"[^"\n]*|[^\s@`"]*)$/u;

/** The mention being typed at `caret` (for the popup), or null: an `@` that may start a
 * mention, outside code, with nothing but the mention's characters up to the caret. */
export function mentionAtCaret(text: string, caret: number): TypedMention | null {
  const before = text.slice(0, caret);
  const match = TYPING.exec(before);
  if (!match) return null;
  const start = match.index;
  if (!startsMention(text, start) || inside(codeSpans(text), start)) return null;
  return { start, prefix: match[1] };
}

const WORD_AFTER = /^[\p{L}\p{N}_]*/u;

/** Where a choice made at `caret` ends: the rest of the word the caret is in goes too. */
export function typedMentionEnd(text: string, caret: number): number {
  return caret + (WORD_AFTER.exec(text.slice(caret))?.[0].length ?? 0);
}
