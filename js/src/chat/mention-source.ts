/**
 * How the chat input asks the kernel about `@` mentions: `mention_candidates {prefix}` for
 * the popup and `mention_preview {mention}` for a chip (Python twins in
 * neta_nb/widgets/chat/requests/mention_requests.py and neta_nb/runtime/mentions/mentions.py).
 *
 * The input knows nothing of the widget's model: it dispatches a `neta-mention-request`
 * event that bubbles to the view's element, where the renderer answers it with a request
 * (`answerMentionRequests`). A view no kernel backs (saved widget state, a page without a
 * renderer) answers nothing, and the input offers no popup and no chips: the kernel would
 * decide at send time anyway.
 */
import type { AnyModel } from "@anywidget/types";
import { request, type Cleanup } from "../anywidget-binding";
import type { MentionKind } from "./mention-parse";

/** `mention_candidates`: what can be mentioned whose key starts with `prefix`. */
export interface MentionCandidatesRequest {
  prefix?: string;
}

/** One row of the popup (Python: `MentionCandidate`, neta_nb/runtime/mentions/mention_candidates.py). */
export interface MentionCandidate {
  /** What follows the `@`: `df`, `In[5]`, `error`, `file:data/x.csv`. */
  key: string;
  /** What choosing it writes. */
  mention: string;
  kind: "variable" | "cell" | "error" | "file" | "folder";
  detail: string;
  size: number | null;
}

export interface MentionCandidatesReply {
  candidates: MentionCandidate[];
}

export interface MentionPreviewRequest {
  mention?: string;
}

/** A chip's content: the block the model reads, or why the mention is unknown. */
export interface MentionPreview {
  mention?: string;
  kind?: MentionKind;
  ok?: boolean;
  rendering?: string;
  summary?: string;
  size?: number;
  problem?: string;
}

type Kind = "mention_candidates" | "mention_preview";

interface MentionRequestDetail {
  kind: Kind;
  payload: Record<string, unknown>;
  /** Set by whoever answers. */
  reply?: Promise<unknown>;
}

const EVENT = "neta-mention-request";

/** Candidates can wait no longer than a keystroke's patience; a preview a little more. */
const TIMEOUT_MS: Record<Kind, number> = { mention_candidates: 4_000, mention_preview: 8_000 };

/** Ask the kernel (through the element's view); null when nothing answers. */
export function askKernel<T>(from: Element, kind: Kind, payload: Record<string, unknown>): Promise<T> | null {
  const detail: MentionRequestDetail = { kind, payload };
  from.dispatchEvent(new CustomEvent(EVENT, { detail, bubbles: true }));
  return (detail.reply as Promise<T> | undefined) ?? null;
}

/** Answer the mention requests of the inputs inside `el` with requests to `model`. */
export function answerMentionRequests(model: AnyModel<Record<string, unknown>>, el: HTMLElement): Cleanup {
  const listener = (event: Event) => {
    const detail = (event as CustomEvent<MentionRequestDetail>).detail;
    if (!detail || (detail.kind !== "mention_candidates" && detail.kind !== "mention_preview")) return;
    event.stopPropagation();
    detail.reply = request(model, detail.kind, detail.payload, { timeout: TIMEOUT_MS[detail.kind] });
  };
  el.addEventListener(EVENT, listener);
  return () => el.removeEventListener(EVENT, listener);
}
