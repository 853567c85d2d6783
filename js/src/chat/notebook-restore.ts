/**
 * What a rewind or fork that put the notebook back did, shown above the chat's input until
 * dismissed or the next prompt: how many changes were undone, the cells left as the user
 * changed them (each named as the notebook shows it; a click shows the cell) with why, or
 * why the notebook was not put back. The kernel's outcome: `NotebookRestore.to_json()`
 * (neta_nb/tools/notebook/changes/restore.py).
 */
import "./notebook-restore.css";
import { createCellName } from "../cards/cell-name";
import { element } from "../dom";
import { t, type Lang, type MessageKey } from "../i18n";

export interface RestoreOutcome {
  restored: { cell_id: string; kind: string }[];
  conflicts: { cell_id: string; kind: string; reason: string }[];
  error: string | null;
}

const REASONS: Record<string, MessageKey> = {
  edited: "notebook_restore_edited",
  moved: "notebook_restore_moved",
  deleted: "notebook_restore_deleted",
  not_kept: "notebook_restore_not_kept",
};

/** The outcome a reply carries, when well formed. */
export function parseRestoreOutcome(value: unknown): RestoreOutcome | null {
  const outcome = value as Partial<RestoreOutcome> | null;
  if (typeof outcome !== "object" || outcome === null) return null;
  if (!Array.isArray(outcome.restored) || !Array.isArray(outcome.conflicts)) return null;
  const restored = outcome.restored.filter((cell) => typeof cell?.cell_id === "string");
  const conflicts = outcome.conflicts.filter((cell) => typeof cell?.cell_id === "string" && typeof cell.reason === "string");
  return { restored, conflicts, error: typeof outcome.error === "string" ? outcome.error : null };
}

export function createRestoreNotice(lang: () => Lang): {
  root: HTMLElement;
  show(outcome: unknown): void;
  clear(): void;
} {
  const root = element("div", "neta-notebook-restore");
  root.setAttribute("role", "status");
  root.hidden = true;

  function clear(): void {
    root.replaceChildren();
    root.hidden = true;
    delete root.dataset.conflicts;
  }

  function show(value: unknown): void {
    clear();
    const outcome = parseRestoreOutcome(value);
    if (!outcome) return;
    const language = lang();
    const body = element("div", "neta-notebook-restore-body");
    if (outcome.error !== null) {
      root.dataset.failed = "";
      body.append(element("div", "neta-notebook-restore-text", t(language, "notebook_restore_failed", { error: outcome.error })));
    } else {
      delete root.dataset.failed;
      const done = outcome.restored.length
        ? t(language, "notebook_restore_done", { n: outcome.restored.length })
        : t(language, "notebook_restore_none");
      body.append(element("div", "neta-notebook-restore-text", done));
      if (outcome.conflicts.length) {
        root.dataset.conflicts = String(outcome.conflicts.length);
        const list = element("ul", "neta-notebook-restore-conflicts");
        list.setAttribute("aria-label", t(language, "notebook_restore_conflicts"));
        for (const conflict of outcome.conflicts) {
          const item = element("li", "neta-notebook-restore-conflict");
          item.dataset.cellId = conflict.cell_id;
          const reason = REASONS[conflict.reason];
          item.append(createCellName(conflict.cell_id, language), document.createTextNode(reason ? ` · ${t(language, reason)}` : ""));
          list.append(item);
        }
        body.append(element("div", "neta-notebook-restore-label", t(language, "notebook_restore_conflicts")), list);
      }
      if (outcome.restored.length) body.append(element("div", "neta-notebook-restore-hint", t(language, "notebook_restore_undo_hint")));
    }
    const close = element("button", "neta-notebook-restore-close", "×");
    close.type = "button";
    close.title = t(language, "close");
    close.setAttribute("aria-label", t(language, "close"));
    close.addEventListener("click", clear);
    root.append(body, close);
    root.hidden = false;
  }

  return { root, show, clear };
}
