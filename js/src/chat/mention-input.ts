/**
 * `@` mentions in the chat's prompt box: the popup while one is typed (candidates from the
 * kernel for what follows the `@`), the chips of those written, and the check before a send.
 * The input bar gives it the prompt box and calls `handleKey` first on every key, `check`
 * before sending, and `refresh` when it changes the text itself.
 */
import { createMentionChips } from "./mention-chips";
import { mentionAtCaret, typedMentionEnd } from "./mention-parse";
import { createMentionPopup } from "./mention-popup";
import { askKernel, type MentionCandidate, type MentionCandidatesReply, type MentionPreview } from "./mention-source";
import type { Lang } from "../i18n";

/** Milliseconds between keystrokes before candidates are asked for. */
const CANDIDATES_DELAY_MS = 60;

export interface MentionInput {
  /** The chips (above the prompt box). */
  chips: HTMLElement;
  /** The popup (positioned above the input bar). */
  popup: HTMLElement;
  handleKey(event: KeyboardEvent): boolean;
  /** Names the unknown mentions of `text` (null: it may go); see MentionChips.check. */
  check(text: string): Promise<string | null>;
  /** The text was changed by code (a send cleared it, a failed one gave it back). */
  refresh(): void;
  /** A prompt went out: what the kernel said may have changed. */
  sent(): void;
  render(): void;
  destroy(): void;
}

export interface MentionInputOptions {
  textarea: HTMLTextAreaElement;
  lang: () => Lang;
  /** The element the kernel's requests bubble from (inside the view). */
  host: HTMLElement;
  /** Something the input shows changed size. */
  onChange(): void;
}

export function createMentionInput(options: MentionInputOptions): MentionInput {
  const { textarea, lang, host } = options;
  let dismissedAt: number | null = null;
  let asked = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let typing: { start: number; prefix: string } | null = null;

  const chips = createMentionChips({
    lang,
    preview: (mention) => askKernel<MentionPreview>(host, "mention_preview", { mention }),
    onChange: options.onChange,
  });
  const popup = createMentionPopup({
    lang,
    textarea,
    onChoose: choose,
    onDismiss: () => {
      dismissedAt = typing?.start ?? null;
      update();
    },
  });

  function choose(candidate: MentionCandidate): void {
    const current = typing;
    if (!current) return;
    const end = typedMentionEnd(textarea.value, textarea.selectionStart);
    // A folder (and `file:` itself) goes on: the popup lists what is inside it; so does an
    // open `@cells[`, whose slice is typed next.
    const goesOn = candidate.kind === "folder" || candidate.mention.endsWith("[");
    const text = goesOn ? candidate.mention : `${candidate.mention} `;
    textarea.focus();
    textarea.setSelectionRange(current.start, end);
    // insertText keeps the edit undoable; setRangeText where it is not supported.
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the only undoable insert
    if (!document.execCommand("insertText", false, text)) {
      textarea.setRangeText(text, current.start, end, "end");
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  /** The popup and the chips, from the text and the caret now. */
  function update(): void {
    const text = textarea.value;
    const caret = textarea.selectionStart === textarea.selectionEnd ? textarea.selectionStart : -1;
    typing = caret >= 0 && document.activeElement === textarea ? mentionAtCaret(text, caret) : null;
    if (typing === null || typing.start !== dismissedAt) dismissedAt = null;
    const wanted = typing !== null && dismissedAt === null ? typing : null;
    chips.update(text, popup.open || wanted ? (typing?.start ?? null) : null);
    clearTimeout(timer);
    if (wanted === null) {
      asked += 1; // a reply on its way is stale now
      popup.hide();
      return;
    }
    timer = setTimeout(() => void listCandidates(wanted.prefix), CANDIDATES_DELAY_MS);
  }

  async function listCandidates(prefix: string): Promise<void> {
    asked += 1;
    const mine = asked;
    const reply = askKernel<MentionCandidatesReply>(host, "mention_candidates", { prefix });
    if (reply === null) return; // no kernel behind the view: no popup
    try {
      const { candidates } = await reply;
      if (mine === asked && typing?.prefix === prefix) {
        popup.show(prefix, candidates);
        chips.update(textarea.value, typing.start);
      }
    } catch {
      if (mine === asked) popup.hide(); // a slow or gone kernel: typing goes on without it
    }
  }

  const onInput = () => update();
  const onCaret = (event: Event) => {
    // Arrow keys move the popup's choice while it is open, not the caret.
    if (event instanceof KeyboardEvent && popup.open && ["ArrowUp", "ArrowDown"].includes(event.key)) return;
    update();
  };
  const onFocus = () => {
    chips.invalidate(); // cells may have run since
    update();
  };
  const onBlur = () => {
    popup.hide();
    typing = null;
    chips.update(textarea.value, null);
  };
  textarea.addEventListener("input", onInput);
  textarea.addEventListener("keyup", onCaret);
  textarea.addEventListener("click", onCaret);
  textarea.addEventListener("focus", onFocus);
  textarea.addEventListener("blur", onBlur);

  return {
    chips: chips.root,
    popup: popup.root,
    handleKey: (event) => popup.handleKey(event),
    async check(text) {
      popup.hide();
      typing = null;
      return chips.check(text);
    },
    refresh: update,
    sent() {
      chips.invalidate();
      update();
    },
    render() {
      chips.render();
    },
    destroy() {
      clearTimeout(timer);
      textarea.removeEventListener("input", onInput);
      textarea.removeEventListener("keyup", onCaret);
      textarea.removeEventListener("click", onCaret);
      textarea.removeEventListener("focus", onFocus);
      textarea.removeEventListener("blur", onBlur);
      popup.destroy();
      chips.destroy();
    },
  };
}
