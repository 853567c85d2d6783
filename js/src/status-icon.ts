/** The running / done / error icon shared by the tool and skill cards. */
import { element } from "./dom";

export type RunStatus = "running" | "done" | "error";
export const RUN_STATUSES: readonly RunStatus[] = ["running", "done", "error"];

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
      node.replaceChildren(
        status === "running"
          ? element("span", "neta-spinner")
          : element("span", status === "error" ? "neta-status-mark neta-cross" : "neta-status-mark"),
      );
    },
  };
}
