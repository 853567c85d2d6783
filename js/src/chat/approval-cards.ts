/**
 * A tool call waiting for the user's decision, as a card of the chat view: who asks (the
 * agent, or one of its sub-agents), what the call will run (its tool's preview: the code,
 * and the cell by the name the notebook shows) or else its arguments, and Allow once /
 * Allow always / Reject. A click disables the buttons until the kernel answered; a failure shows beside
 * them and gives the buttons back.
 */
import type { Approval, ApprovalPreview } from "./chat-view-traits";
import { appendCodeText, element } from "../dom";
import { colourDiffBlocks } from "../diff-lines";
import { t, type Lang, type MessageKey } from "../i18n";
import { createCellName, labelAround } from "../cards/cell-name";
import { createInlineError } from "../inline-error";
import { createCellEditCard, parseProposal } from "../cards/cell-edit-card";
import { draftKey, proposalDrafts } from "../cards/proposal-drafts";
import { arrangeApprovals, createChangesCard } from "../cards/changes-card";

/** The code a call will run (its tool's preview), with the cell it runs named as the
 * notebook shows it: a code block, never its arguments' JSON. */
function previewBlock(preview: ApprovalPreview, lang: Lang): HTMLElement {
  const block = element("div", "neta-chat-approval-preview");
  const what = element("div", "neta-chat-approval-what");
  if (preview.summary) {
    // A call that runs no code of its own (run_all, a restart): what it does, in words,
    // and the cells it acts on, in order, each by the name the notebook shows.
    what.textContent = preview.summary;
    block.append(what);
    const cells = preview.cells ?? [];
    if (cells.length) {
      const list = element("ol", "neta-chat-approval-cells");
      for (const cell of cells) {
        const row = element("li", "neta-chat-approval-cell");
        const line = element("code", "neta-chat-approval-cell-line");
        appendCodeText(line, cell.first_line);
        row.append(createCellName(cell.cell_id, lang, cell.cell_label), line);
        list.append(row);
      }
      block.append(list);
    }
    const more = preview.cells_left_out ?? 0;
    if (more > 0) block.append(element("div", "neta-chat-approval-cut", t(lang, "approval_cells_more", { count: more.toLocaleString() })));
    if (!preview.code) return block;
  } else if (preview.cell_id) {
    what.append(...labelAround(lang, "approval_runs_cell", "cell", createCellName(preview.cell_id, lang, preview.cell_label)));
  } else {
    // A change to files (an outside agent's Write or Edit): its unified diff.
    what.textContent = t(lang, preview.language === "diff" ? "approval_changes_files" : "approval_runs_code");
  }
  const code = element("pre", "neta-chat-approval-args neta-chat-approval-code");
  code.dataset.language = preview.language;
  const inner = element("code");
  appendCodeText(inner, preview.code);
  code.append(inner);
  if (preview.language === "diff") {
    inner.classList.add("language-diff");
    colourDiffBlocks(code);
  }
  if (what.parentNode !== block) block.append(what);
  block.append(code);
  if (preview.cut > 0) block.append(element("div", "neta-chat-approval-cut", t(lang, "approval_code_cut", { count: preview.cut.toLocaleString() })));
  return block;
}

export type Decision = "allow_once" | "allow_always" | "reject";

export interface ApprovalCardOptions {
  lang: () => Lang;
  label: (key: MessageKey, params?: Record<string, string | number>) => string;
  /** `path`: the sub-agent runs the request came through (`[]`: the session's own);
   * `client`: the outside MCP client whose request it is (shown in this chat too). */
  approve?: (id: string, decision: Decision, path: string[], text?: string, client?: string) => Promise<unknown>;
}

/** The cards of the approvals waiting, in the order asked: the changes one response
 * proposed together in one Changes card (cards/changes-card.ts), the rest one each. */
export function createApprovalCards(approvals: readonly Approval[], options: ApprovalCardOptions): HTMLElement[] {
  return arrangeApprovals(approvals).map((entry) => {
    if ("approval" in entry) return createApprovalCard(entry.approval, options);
    return createChangesCard(entry.changes, {
      lang: options.lang(),
      decide: (change, accepted, text) => options.approve?.(change.id, accepted ? "allow_once" : "reject", change.path ?? [], text, change.client) ?? Promise.resolve(),
    });
  });
}

export function createApprovalCard(approval: Approval, options: ApprovalCardOptions): HTMLElement {
  const card = createCard(approval, options);
  if (approval.client) {
    // Another party's request, in the chat the user is looking at: whose it is, first.
    card.classList.add("neta-is-outside");
    card.prepend(element("div", "neta-chat-approval-from", options.label("approval_from_client", { client: approval.client })));
  }
  return card;
}

function createCard(approval: Approval, { lang, label, approve: answer }: ApprovalCardOptions): HTMLElement {
  const approve = answer && ((id: string, decision: Decision, path: string[], text?: string) => answer(id, decision, path, text, approval.client));
  const card = element("div", "neta-card neta-chat-approval");
  card.dataset.id = approval.id;
  const proposal = parseProposal(approval.proposal);
  if (proposal) {
    // A proposed notebook edit: its diff, Accept / Edit first / Reject.
    card.classList.add("neta-is-proposal");
    if (approval.agent) card.classList.add("neta-is-subagent");
    const path = approval.path ?? [];
    // The cards are drawn anew when the list of approvals changes: what the user typed
    // into this one's editor is kept apart, under its request and texts.
    const key = draftKey(approval.id, path, proposal.cell_id, proposal.before, proposal.after);
    card.append(
      createCellEditCard(
        { ...proposal, decision: "pending" },
        {
          lang: lang(),
          draft: proposalDrafts.get(key),
          decide: async (accepted, text) => {
            await approve?.(approval.id, accepted ? "allow_once" : "reject", path, text);
            proposalDrafts.forget(key);
          },
        },
      ),
    );
    return card;
  }
  const title = element("div", "neta-chat-approval-title");
  const who = approval.agent ?? approval.client;
  const asking = who
    ? label("approval_title_subagent", { name: approval.name, agent: who })
    : label("approval_title", { name: approval.name });
  title.append(element("span", "neta-chat-approval-icon"), element("span", undefined, asking));
  if (approval.agent) card.classList.add("neta-is-subagent");
  const hint = element("div", "neta-chat-approval-hint", label("approval_hint"));
  // What it will run, as its tool shows it (the code, the cell); otherwise its arguments.
  const args = approval.preview ? previewBlock(approval.preview, lang()) : element("pre", "neta-chat-approval-args", JSON.stringify(approval.args ?? {}, null, 2));
  const buttons = element("div", "neta-chat-approval-buttons");
  const cardError = createInlineError(lang);
  const decisions: [Decision, MessageKey, string][] = [
    ["allow_once", "allow_once", "neta-chat-button-primary"],
    ["allow_always", "allow_always", ""],
    ["reject", "reject", "neta-chat-button-danger"],
  ];
  const setDisabled = (disabled: boolean) => {
    for (const other of Array.from(buttons.querySelectorAll("button"))) other.disabled = disabled;
  };
  for (const [decision, key, extra] of decisions) {
    const button = element("button", `neta-chat-button ${extra}`.trim(), label(key));
    button.type = "button";
    button.dataset.decision = decision;
    button.addEventListener("click", () => {
      setDisabled(true);
      cardError.clear();
      void approve?.(approval.id, decision, approval.path ?? []).catch((error) => {
        setDisabled(false);
        cardError.show(error);
      });
    });
    buttons.append(button);
  }
  card.append(title, hint, args, buttons, cardError.root);
  return card;
}
