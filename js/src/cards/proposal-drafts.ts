/**
 * What the user has typed into pending proposals' editors ("Edit first"), kept apart from
 * the cards: the chat view draws its approval cards anew whenever its list of approvals
 * changes (another sub-agent asks, another proposal is answered), and a card drawn anew
 * must show the text the user was typing, open, where they were typing it.
 *
 * A draft is found by the proposal's request (its sub-agent path and call id) and its
 * texts, so a call id another session reuses does not find it; the newest
 * `REMEMBERED_DRAFTS` are kept, and a draft goes once its proposal is decided.
 */

export const REMEMBERED_DRAFTS = 50;

export interface ProposalDraft {
  /** The editor's text; `undefined` while the editor was never opened. */
  text?: string;
  /** The editor had the focus when the card was last drawn. */
  focused?: boolean;
  /** The editor's selection, `[start, end]`. */
  selection?: [number, number];
}

/** A short fingerprint of a text (FNV-1a), for the key. */
function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return `${text.length}.${(hash >>> 0).toString(36)}`;
}

export function draftKey(id: string, path: readonly string[], cellId: string, before: string, after: string): string {
  return JSON.stringify([path, id, cellId, fingerprint(before), fingerprint(after)]);
}

export class ProposalDrafts {
  private readonly drafts = new Map<string, ProposalDraft>();

  /** The draft under `key`, made (empty) when there is none. */
  get(key: string): ProposalDraft {
    let draft = this.drafts.get(key);
    if (draft === undefined) {
      draft = {};
      this.drafts.set(key, draft);
      for (const old of this.drafts.keys()) {
        if (this.drafts.size <= REMEMBERED_DRAFTS) break;
        this.drafts.delete(old);
      }
    }
    return draft;
  }

  /** The proposal was decided: its draft is of no use any more. */
  forget(key: string): void {
    this.drafts.delete(key);
  }

  get size(): number {
    return this.drafts.size;
  }
}

/** The drafts of every chat view on the page. */
export const proposalDrafts = new ProposalDrafts();
