/**
 * The "Changes" card: the notebook changes one model response proposed together
 * (neta_nb.tools.notebook.changes), reviewed as one — what it adds, changes, deletes and
 * moves, each change's own card with its diff, Accept all / Reject all, and a decision
 * per change.
 *
 * - Pending: the kernel asked about every change at once (one approval request each,
 *   whose proposal names the set: `group: {id, index, size}`). A decision per change is
 *   kept here until every change has one (it can be changed until then); then all go to
 *   the kernel together, which makes the accepted ones as one undo step. Accept all /
 *   Reject all decide every change still open. The decisions live apart from the card
 *   (`changeDecisions`): the chat view draws its approvals anew whenever they change.
 * - Decided (history, a saved notebook): the first change's card carries the set's
 *   summary (`group.changes`): what became of each, drawn above that card.
 */
import "./changes-card.css";
import { element } from "../dom";
import { t, type Lang, type MessageKey } from "../i18n";
import { createInlineError } from "../inline-error";
import { type CellEditProposal, createCellEditCard, parseProposal, PROPOSAL_KINDS } from "./cell-edit-card";
import { createCellName } from "./cell-name";
import { draftKey, proposalDrafts } from "./proposal-drafts";

type Kind = (typeof PROPOSAL_KINDS)[number];

/** A change's place in its set, as the kernel names it. */
export interface ChangeGroup {
  id: string;
  index: number;
  size: number;
  /** Decided sets: what became of each change (on the first change's card only). */
  changes?: ChangeLine[];
}

/** One change of a decided set, as its summary lists it. */
export interface ChangeLine {
  kind: Kind;
  cell_id: string;
  decision: "accepted" | "rejected" | "failed";
  call_id?: string;
  cell_label?: string;
  cell_type?: string;
  added?: number;
  removed?: number;
}

/** The set a proposal belongs to, when well formed. */
export function groupOf(proposal: unknown): ChangeGroup | null {
  const group = (proposal as { group?: unknown } | null)?.group;
  if (!group || typeof group !== "object") return null;
  const { id, index, size } = group as Record<string, unknown>;
  if (typeof id !== "string" || !Number.isInteger(index) || !Number.isInteger(size)) return null;
  return group as ChangeGroup;
}

/** What a request to decide looks like to this card (the chat view's `Approval`). */
export interface AskedChange {
  id: string;
  path?: string[];
  client?: string;
  proposal?: Record<string, unknown>;
}

export type Arranged<A extends AskedChange> = { approval: A } | { changes: A[] };

/**
 * The approvals in the order asked, with the pending changes of one set (same asker,
 * same `group.id`, a set of two or more) gathered where its first one is, in the set's
 * order. A set stays one card while its changes are answered and leave, one by one.
 */
export function arrangeApprovals<A extends AskedChange>(approvals: readonly A[]): Arranged<A>[] {
  const sets = new Map<string, A[]>();
  const keyOf = (approval: A): string | null => {
    const group = groupOf(approval.proposal);
    return group ? JSON.stringify([approval.client ?? "", approval.path ?? [], group.id]) : null;
  };
  for (const approval of approvals) {
    const key = keyOf(approval);
    if (key === null) continue;
    const members = sets.get(key) ?? [];
    members.push(approval);
    sets.set(key, members);
  }
  const arranged: Arranged<A>[] = [];
  const placed = new Set<string>();
  for (const approval of approvals) {
    const key = keyOf(approval);
    const members = key === null ? undefined : sets.get(key);
    const size = groupOf(approval.proposal)?.size ?? 0;
    if (key === null || !members || size < 2) {
      arranged.push({ approval });
    } else if (!placed.has(key)) {
      placed.add(key);
      const order = (member: A) => groupOf(member.proposal)?.index ?? 0;
      arranged.push({ changes: [...members].sort((a, b) => order(a) - order(b)) });
    }
  }
  return arranged;
}

/** How many changes of each kind, in the order the card names them. */
export function kindCounts(kinds: readonly string[]): [Kind, number][] {
  const order: Kind[] = ["insert", "edit", "delete", "move"];
  return order.map((kind): [Kind, number] => [kind, kinds.filter((k) => k === kind).length]).filter(([, n]) => n > 0);
}

/** A decision taken in the card and not yet sent: accepted (with the user's text, when
 * they changed it first) or rejected. */
export interface ChosenDecision {
  accepted: boolean;
  text?: string;
}

/**
 * The decisions taken in Changes cards, by set: kept apart from the cards, which are drawn
 * anew whenever the chat's approvals change (each answer sent takes its change out). A set
 * is known by its asker and id (its first change's call id, which ids of later responses
 * may repeat: a set's decisions are forgotten once sent); the newest `REMEMBERED_SETS`
 * are kept.
 */
export class ChangeDecisions {
  static readonly REMEMBERED_SETS = 20;
  private readonly sets = new Map<string, Map<string, ChosenDecision>>();

  of(key: string): Map<string, ChosenDecision> {
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new Map();
      this.sets.set(key, set);
      for (const old of this.sets.keys()) {
        if (this.sets.size <= ChangeDecisions.REMEMBERED_SETS) break;
        this.sets.delete(old);
      }
    }
    return set;
  }

  forget(key: string): void {
    this.sets.delete(key);
  }
}

export const changeDecisions = new ChangeDecisions();

/** The key of a pending set's decisions. */
export function setKey(changes: readonly AskedChange[]): string {
  const first = changes[0];
  return JSON.stringify([first?.client ?? "", first?.path ?? [], groupOf(first?.proposal)?.id ?? ""]);
}

/** The answers to send once every change has a decision (`null` while one has none): one
 * per change, in the set's order. */
export function answers(changes: readonly AskedChange[], chosen: ReadonlyMap<string, ChosenDecision>): { id: string; accepted: boolean; text?: string }[] | null {
  const sent = [];
  for (const change of changes) {
    const decision = chosen.get(change.id);
    if (!decision) return null;
    sent.push({ id: change.id, accepted: decision.accepted, ...(decision.text !== undefined ? { text: decision.text } : {}) });
  }
  return sent;
}

function countsLine(kinds: readonly string[], lang: Lang): HTMLElement {
  const line = element("span", "neta-changes-counts");
  for (const [kind, n] of kindCounts(kinds)) {
    line.append(element("span", `neta-changes-count neta-changes-${kind}`, t(lang, `changes_kind_${kind}` as MessageKey, { n })));
  }
  return line;
}

export interface ChangesCardOptions {
  lang: Lang;
  /** Send one change's decision (`text`: the accepted text when the user changed it). */
  decide: (change: AskedChange, accepted: boolean, text?: string) => Promise<unknown>;
}

/** The pending Changes card of `changes` (the requests of one set, in its order). */
export function createChangesCard(changes: readonly AskedChange[], { lang, decide }: ChangesCardOptions): HTMLElement {
  const key = setKey(changes);
  const chosen = changeDecisions.of(key);
  const proposals = changes.map((change) => parseProposal(change.proposal));
  const card = element("div", "neta-card neta-chat-approval neta-is-proposal neta-changes");
  card.dataset.group = groupOf(changes[0]?.proposal)?.id ?? "";
  const head = element("div", "neta-changes-head");
  const title = element("span", "neta-changes-title", t(lang, "changes_title"));
  const progress = element("span", "neta-changes-progress");
  head.append(title, countsLine(proposals.map((p) => p?.kind ?? ""), lang), progress);
  const hint = element("div", "neta-chat-approval-hint", t(lang, "changes_hint"));
  const buttons = element("div", "neta-changes-buttons");
  const acceptAll = element("button", "neta-chat-button neta-chat-button-primary", t(lang, "changes_accept_all"));
  const rejectAll = element("button", "neta-chat-button neta-chat-button-danger", t(lang, "changes_reject_all"));
  acceptAll.type = rejectAll.type = "button";
  acceptAll.dataset.decision = "accept-all";
  rejectAll.dataset.decision = "reject-all";
  buttons.append(acceptAll, rejectAll);
  const error = createInlineError(() => lang);
  const list = element("div", "neta-changes-list");
  // What the set holds and its two buttons stay in sight while the user reads down the
  // changes (the card is taller than the chat).
  const bar = element("div", "neta-changes-bar");
  bar.append(head, hint, buttons, error.root);
  card.append(bar, list);

  let sending = false;
  const send = async () => {
    const sent = answers(changes, chosen);
    if (!sent || sending) return;
    sending = true;
    for (const node of Array.from(card.querySelectorAll("button"))) node.disabled = true;
    error.clear();
    try {
      for (const [index, answer] of sent.entries()) await decide(changes[index], answer.accepted, answer.text);
      changeDecisions.forget(key);
    } catch (failure) {
      sending = false;
      for (const node of Array.from(card.querySelectorAll("button"))) node.disabled = false;
      error.show(failure);
    }
  };

  const draw = (index: number): HTMLElement => {
    const change = changes[index];
    const proposal = proposals[index];
    const item = element("div", "neta-changes-item");
    item.dataset.callId = change.id;
    if (!proposal) return item;
    const decision = chosen.get(change.id);
    item.dataset.decision = decision ? (decision.accepted ? "accepted" : "rejected") : "pending";
    if (decision) {
      const shown: CellEditProposal = decision.text !== undefined ? { ...proposal, after: decision.text, changed_by_user: true } : proposal;
      item.append(createCellEditCard({ ...shown, decision: decision.accepted ? "accepted" : "rejected" }, { lang, chosen: true }));
      const again = element("button", "neta-chat-button neta-changes-redecide", t(lang, "changes_redecide"));
      again.type = "button";
      again.addEventListener("click", () => {
        chosen.delete(change.id);
        refresh();
      });
      item.append(again);
      return item;
    }
    const draftOf = draftKey(change.id, change.path ?? [], proposal.cell_id, proposal.before, proposal.after);
    item.append(
      createCellEditCard(
        { ...proposal, decision: "pending" },
        {
          lang,
          draft: proposalDrafts.get(draftOf),
          decide: async (accepted, text) => {
            chosen.set(change.id, text !== undefined ? { accepted, text } : { accepted });
            proposalDrafts.forget(draftOf);
            refresh();
            await send();
          },
        },
      ),
    );
    return item;
  };

  const refresh = () => {
    list.replaceChildren(...changes.map((_, index) => draw(index)));
    const done = changes.filter((change) => chosen.has(change.id)).length;
    progress.textContent = t(lang, "changes_decided", { done, total: changes.length });
    acceptAll.disabled = rejectAll.disabled = sending || done === changes.length;
  };
  const decideAll = (accepted: boolean) => {
    for (const change of changes) if (!chosen.has(change.id)) chosen.set(change.id, { accepted });
    refresh();
    void send();
  };
  acceptAll.addEventListener("click", () => decideAll(true));
  rejectAll.addEventListener("click", () => decideAll(false));
  refresh();
  return card;
}

/** A decided set's summary (the first change's card carries it): the kinds counted, and
 * each change with the cell it acts on and what became of it. */
export function createChangesSummary(group: ChangeGroup, lang: Lang): HTMLElement {
  const lines = Array.isArray(group.changes) ? group.changes.filter((line) => line && PROPOSAL_KINDS.includes(line.kind)) : [];
  const box = element("div", "neta-changes neta-changes-summary");
  box.dataset.group = group.id;
  const head = element("div", "neta-changes-head");
  head.append(element("span", "neta-changes-title", t(lang, "changes_title")), countsLine(lines.map((line) => line.kind), lang));
  const list = element("ol", "neta-changes-lines");
  for (const line of lines) {
    const row = element("li", "neta-changes-line");
    row.dataset.decision = line.decision;
    const kind = element("span", `neta-changes-kind neta-changes-${line.kind}`, t(lang, `changes_kind_${line.kind}` as MessageKey, { n: "" }).trim());
    const lines = element("span", "neta-changes-delta");
    if (line.added) lines.append(element("span", "neta-changes-added", `+${line.added}`));
    if (line.added && line.removed) lines.append(" ");
    if (line.removed) lines.append(element("span", "neta-changes-removed", `−${line.removed}`));
    const badgeKey = line.decision === "accepted" ? "cell_edit_accepted" : line.decision === "rejected" ? "cell_edit_rejected" : "changes_failed";
    const badge = element("span", "neta-changes-badge", t(lang, badgeKey));
    row.append(kind, " ", createCellName(line.cell_id, lang, line.cell_label), " ", lines, " ", badge);
    list.append(row);
  }
  box.append(head, list);
  if (lines.some((line) => line.decision === "accepted")) box.append(element("div", "neta-cell-edit-note", t(lang, "changes_undo_hint")));
  return box;
}
