/**
 * The status icon shared by the tool and skill cards. Only `running` spins: a call that
 * waits for the user's approval, was rejected or was stopped shows a still mark, so a
 * stopped turn leaves nothing spinning.
 */
import { element } from "./dom";
import type { MessageKey } from "./i18n";

export type RunStatus = "waiting" | "running" | "done" | "error" | "rejected" | "cancelled";
export const RUN_STATUSES: readonly RunStatus[] = ["waiting", "running", "done", "error", "rejected", "cancelled"];

/** The tag label of each status (the skill card shows none while running). */
export const RUN_STATUS_LABEL: Record<RunStatus, MessageKey> = {
  waiting: "tool_waiting",
  running: "tool_running",
  done: "tool_done",
  error: "tool_error",
  rejected: "tool_rejected",
  cancelled: "tool_cancelled",
};

/** The tag's colour modifier of each status. */
export function runStatusTagClass(status: RunStatus): string {
  if (status === "done") return " neta-tag-success";
  if (status === "error") return " neta-tag-error";
  if (status === "waiting") return " neta-tag-warn";
  if (status === "rejected" || status === "cancelled") return " neta-tag-muted";
  return "";
}

export function normalizeRunStatus(value: unknown): RunStatus {
  return RUN_STATUSES.includes(value as RunStatus) ? (value as RunStatus) : "running";
}

export function createStatusIcon(): { node: HTMLSpanElement; set(status: RunStatus): void } {
  const node = element("span", "neta-status-icon");
  node.setAttribute("aria-hidden", "true");
  let current: RunStatus | null = null;
  return {
    node,
    set(status) {
      if (status === current) return;
      current = status;
      node.dataset.status = status;
      const crossed = status === "error" || status === "rejected";
      node.replaceChildren(
        status === "running"
          ? element("span", "neta-spinner")
          : element("span", crossed ? "neta-status-mark neta-cross" : "neta-status-mark"),
      );
    },
  };
}
