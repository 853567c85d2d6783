/**
 * A proposed notebook edit as a card: the cell, the unified diff of its text (made by the
 * kernel with difflib, drawn line by line as text: nothing in it is ever markup), and what
 * became of it.
 *
 * - Pending (an approval request carrying a `proposal`): Accept, Reject, and "Edit first",
 *   which opens the proposed text in a box; Accept then sends the text as changed.
 * - Decided (the tool's result, `application/vnd.neta-nb.cell-edit+json`): Accepted or
 *   Rejected; an accepted one offers Undo, which asks the notebook extension on the page
 *   to put the text back — refused, with a message, when the cell changed since. A card
 *   whose texts were too large to keep (`undo: false`) shows its diff and decision only.
 *
 * A deletion (`kind: "delete"`) shows the cell's whole text as removed lines; a move
 * (`kind: "move"`) the cell, unchanged, and from which position to which. Neither has
 * "Edit first". An accepted move's Undo moves it back; an accepted deletion is undone in
 * the notebook (its Undo Cell Operation, Z in command mode, restores the cell, outputs
 * and all), and its card says so.
 */
import "./cell-edit-card.css";
import { diffLine, diffLineKinds } from "../diff-lines";
import { appendCodeText, element } from "../dom";
import { t, type Lang } from "../i18n";
import { createInlineError } from "../inline-error";
import { askNotebook, createCellName, labelAround } from "./cell-name";
import type { ProposalDraft } from "./proposal-drafts";

export const CELL_EDIT_TYPE = "application/vnd.neta-nb.cell-edit+json";

export const PROPOSAL_KINDS = ["edit", "insert", "delete", "move"] as const;

export interface CellEditProposal {
  kind: (typeof PROPOSAL_KINDS)[number];
  cell_id: string;
  before: string;
  after: string;
  diff: string[];
  diff_left_out?: number;
  /** `undone`: accepted, then taken back with the card's Undo (see `onUndone`). */
  decision: "pending" | "accepted" | "rejected" | "undone";
  cell_type?: string;
  after_cell_id?: string | null;
  changed_by_user?: boolean;
  /** A deletion's or move's cell as the notebook showed it then (`[2]`, or its position). */
  cell_label?: string;
  /** A move: the cell's position before and after (1 the first). */
  from_index?: number;
  to_index?: number;
  /** `false`: the texts did not fit the card (only its diff and decision are kept), so
   * there is nothing to put back and no Undo. */
  undo?: boolean;
  /** One of a set of changes reviewed together (cards/changes-card.ts). */
  group?: { id: string; index: number; size: number; changes?: unknown[] };
  /** Undone on the page, where the cell had run the accepted code: its outputs went. */
  outputs_cleared?: boolean;
}

export interface CellEditCardOptions {
  lang: Lang;
  /** Pending cards: send the decision (`text`: the accepted text when the user changed it). */
  decide?: (accepted: boolean, text?: string) => Promise<unknown>;
  /** Pending cards: what the user typed into the editor, kept across redraws of the card
   * (see proposal-drafts.ts); read when the card is made, written as they type. */
  draft?: ProposalDraft;
  /** Decided in a Changes card and not yet made (it is made when every change of the set
   * is decided): the decision is shown, with no Undo. */
  chosen?: boolean;
  /** The card's Undo took the change back: the owner of the card's data keeps that, so
   * the card drawn again (a long chat's message redrawn) says undone, not accepted —
   * and, `outputsCleared`, that the cell's outputs went with it. */
  onUndone?: (outputsCleared: boolean) => void;
}

/** The proposal a display item or an approval carries, when well formed. */
export function parseProposal(value: unknown): CellEditProposal | null {
  let data = value;
  if (typeof value === "string") {
    try {
      data = JSON.parse(value);
    } catch {
      return null;
    }
  }
  if (!data || typeof data !== "object") return null;
  const proposal = data as CellEditProposal;
  const ok =
    PROPOSAL_KINDS.includes(proposal.kind) &&
    typeof proposal.cell_id === "string" &&
    typeof proposal.before === "string" &&
    typeof proposal.after === "string" &&
    Array.isArray(proposal.diff);
  return ok ? proposal : null;
}

/** The card's title, the cell named as the notebook shows it (a click shows the cell). */
function title(proposal: CellEditProposal, lang: Lang): Node[] {
  if (proposal.kind === "edit") return labelAround(lang, "cell_edit_title", "id", createCellName(proposal.cell_id, lang));
  if (proposal.kind === "delete") return labelAround(lang, "cell_delete_title", "id", createCellName(proposal.cell_id, lang, proposal.cell_label));
  if (proposal.kind === "move") {
    return labelAround(lang, "cell_move_title", "id", createCellName(proposal.cell_id, lang, proposal.cell_label), {
      from: proposal.from_index ?? "?",
      to: proposal.to_index ?? "?",
    });
  }
  const type = proposal.cell_type ?? "code";
  return proposal.after_cell_id
    ? labelAround(lang, "cell_insert_after", "id", createCellName(proposal.after_cell_id, lang), { type })
    : [document.createTextNode(t(lang, "cell_insert_end", { type }))];
}

function diffBlock(proposal: CellEditProposal, lang: Lang): HTMLElement {
  const block = element("pre", "neta-cell-edit-diff");
  block.tabIndex = 0; // scrollable by keyboard
  const lines = proposal.diff.filter((line): line is string => typeof line === "string");
  const kinds = diffLineKinds(lines);
  for (const [index, line] of lines.entries()) {
    const row = diffLine(line, kinds[index]);
    appendCodeText(row, line);
    block.append(row, "\n");
  }
  const more = proposal.diff_left_out ?? 0;
  if (more > 0) block.append(element("span", "neta-diff-line neta-diff-meta", t(lang, "cell_edit_more_lines", { n: more })));
  return block;
}

/** What the card's Undo asks of the page: the edit's text put back, the inserted cell
 * deleted, the moved cell moved back (each refused when the cell changed since). */
export function undoRequest(proposal: CellEditProposal): [string, Record<string, unknown>] {
  if (proposal.kind === "edit") return ["undo", { cell_id: proposal.cell_id, before: proposal.before, after: proposal.after }];
  if (proposal.kind === "move") {
    return ["move", { cell_id: proposal.cell_id, expected: proposal.after, from_index: (proposal.to_index ?? 0) - 1, to_index: (proposal.from_index ?? 0) - 1 }];
  }
  return ["delete", { cell_id: proposal.cell_id, expected: proposal.after }];
}

export function createCellEditCard(proposal: CellEditProposal, { lang, decide, draft, chosen, onUndone }: CellEditCardOptions): HTMLElement {
  const card = element("div", "neta-cell-edit");
  card.dataset.decision = proposal.decision;
  card.dataset.cellId = proposal.cell_id;
  const head = element("div", "neta-cell-edit-head");
  const badge = element("span", "neta-cell-edit-badge");
  const setBadge = (state: string) => {
    card.dataset.decision = state;
    const key = state === "accepted" ? "cell_edit_accepted" : state === "rejected" ? "cell_edit_rejected" : state === "undone" ? "cell_edit_undone" : "cell_edit_pending";
    badge.textContent = t(lang, key);
  };
  setBadge(proposal.decision);
  const heading = element("span", "neta-cell-edit-title");
  heading.append(...title(proposal, lang));
  heading.title = heading.textContent ?? "";
  head.append(heading, badge);
  if (proposal.changed_by_user) head.append(element("span", "neta-cell-edit-note", t(lang, "cell_edit_changed_by_user")));
  const outputsCleared = () => element("span", "neta-cell-edit-note neta-cell-edit-outputs-cleared", t(lang, "cell_edit_outputs_cleared"));
  if (proposal.decision === "undone" && proposal.outputs_cleared) head.append(outputsCleared());
  card.append(head, diffBlock(proposal, lang));
  const buttons = element("div", "neta-cell-edit-buttons");
  const error = createInlineError(() => lang);
  if (proposal.decision === "pending" && decide) {
    const editor = document.createElement("textarea");
    editor.className = "neta-cell-edit-editor";
    editor.value = proposal.after;
    editor.hidden = true;
    editor.spellcheck = false;
    editor.setAttribute("aria-label", t(lang, "cell_edit_edit"));
    const button = (key: "cell_edit_accept" | "cell_edit_reject" | "cell_edit_edit", extra: string) => {
      const node = element("button", `neta-chat-button ${extra}`.trim(), t(lang, key));
      node.type = "button";
      buttons.append(node);
      return node;
    };
    const accept = button("cell_edit_accept", "neta-chat-button-primary");
    const edit = button("cell_edit_edit", "");
    const reject = button("cell_edit_reject", "neta-chat-button-danger");
    // A deletion or a move has no text of its own to change first.
    edit.hidden = proposal.kind === "delete" || proposal.kind === "move";
    accept.dataset.decision = "accept";
    reject.dataset.decision = "reject";
    edit.dataset.decision = "edit";
    const send = (accepted: boolean) => {
      for (const node of [accept, edit, reject]) node.disabled = true;
      error.clear();
      const text = accepted && !editor.hidden && editor.value !== proposal.after ? editor.value : undefined;
      decide(accepted, text).catch((failure: unknown) => {
        for (const node of [accept, edit, reject]) node.disabled = false;
        error.show(failure);
      });
    };
    accept.addEventListener("click", () => send(true));
    reject.addEventListener("click", () => send(false));
    const open = () => {
      editor.hidden = false;
      edit.disabled = true;
    };
    edit.addEventListener("click", () => {
      open();
      if (draft) draft.text = editor.value;
      editor.focus();
    });
    if (draft) {
      const keep = () => {
        draft.text = editor.value;
        draft.selection = [editor.selectionStart, editor.selectionEnd];
      };
      for (const kind of ["input", "select", "keyup", "mouseup"]) editor.addEventListener(kind, keep);
      editor.addEventListener("focus", () => {
        draft.focused = true;
      });
      editor.addEventListener("blur", () => {
        draft.focused = false;
      });
      if (draft.text !== undefined) {
        // Drawn anew while the user was changing the proposal: as they left it.
        editor.value = draft.text;
        open();
        const { focused, selection } = draft;
        requestAnimationFrame(() => {
          if (!focused || !editor.isConnected) return;
          editor.focus();
          if (selection) editor.setSelectionRange(selection[0], selection[1]);
        });
      }
    }
    card.append(editor);
  } else if (chosen) {
    // Decided in its Changes card, not made yet: nothing to undo.
  } else if (proposal.decision === "accepted" && proposal.kind === "delete") {
    // Made with the rest of its set, it is undone with them (one step of the notebook's undo).
    const hint = proposal.group ? "changes_undo_hint" : "cell_delete_undo_hint";
    head.append(element("span", "neta-cell-edit-note neta-cell-edit-undo-hint", t(lang, hint)));
  } else if (proposal.decision === "accepted" && proposal.undo !== false) {
    const undo = element("button", "neta-chat-button neta-cell-edit-undo", t(lang, "cell_edit_undo"));
    undo.type = "button";
    undo.addEventListener("click", () => {
      undo.disabled = true;
      error.clear();
      const [op, args] = undoRequest(proposal);
      void askNotebook(card, op, args).then((reply) => {
        if (reply.ok) {
          setBadge("undone");
          undo.remove();
          // The cell had run the accepted code: its outputs went with it.
          const cleared = Boolean((reply.result as { outputs_cleared?: boolean } | undefined)?.outputs_cleared);
          if (cleared) head.append(outputsCleared());
          onUndone?.(cleared);
          return;
        }
        undo.disabled = false;
        const code = reply.error?.code;
        if (code === "changed") error.show(t(lang, "cell_edit_undo_refused"));
        else if (code === "no_bridge") error.show(t(lang, "cell_edit_no_page"));
        else error.show(reply.error?.message ?? t(lang, "cell_edit_undo_refused"));
      });
    });
    buttons.append(undo);
  }
  if (buttons.childElementCount) card.append(buttons, error.root);
  return card;
}
