/**
 * The plan card (seed 002 §6): title, `k/N done`, progress bar and collapse in the header;
 * one row per item with a status icon, completed struck through, the active row highlighted
 * with a spinner and an "in progress" tag, cancelled rows marked. Collapsed, the card still
 * shows the active row. Rows are keyed by id and updated in place, so changes animate.
 *
 * `paused`: nothing is working on the plan now (the chat's turn ended or was stopped), so
 * the in-progress row shows a still "paused" mark instead of a spinner.
 */
import "./todo-card.css";
import { element, makeToggle, setModifier } from "../dom";
import { normalizeLang, t, type Lang, type MessageKey } from "../i18n";
import type { Component, ComponentOptions } from "../types";

export type TodoStatus = "pending" | "in_progress" | "completed" | "cancelled";

export interface TodoItem {
  id: string;
  content: string;
  status: TodoStatus;
}

export interface TodoCardState {
  todos: TodoItem[];
  collapsed: boolean;
  paused: boolean;
  lang: Lang;
}

const STATUSES: readonly TodoStatus[] = ["pending", "in_progress", "completed", "cancelled"];
const STATUS_LABEL: Record<TodoStatus, MessageKey> = {
  pending: "status_pending",
  in_progress: "in_progress",
  completed: "status_completed",
  cancelled: "status_cancelled",
};

interface Row {
  root: HTMLDivElement;
  icon: HTMLSpanElement;
  content: HTMLSpanElement;
  tag: HTMLSpanElement;
}

function normalizeStatus(value: unknown): TodoStatus {
  return STATUSES.includes(value as TodoStatus) ? (value as TodoStatus) : "pending";
}

export function createTodoCard(el: HTMLElement, options: ComponentOptions<TodoCardState> = {}): Component<TodoCardState> {
  const state: TodoCardState = { todos: [], collapsed: false, paused: false, lang: normalizeLang(options.lang) };

  const root = element("div", "neta-root neta-card neta-todo-card");
  const header = element("div", "neta-card-header neta-todo-header");
  const icon = element("span", "neta-todo-title-icon");
  icon.setAttribute("aria-hidden", "true");
  const title = element("span", "neta-title neta-todo-title");
  const count = element("span", "neta-todo-count");
  const bar = element("div", "neta-progress neta-todo-progress");
  const fill = element("div", "neta-progress-fill");
  bar.append(fill);
  const chevron = element("span", "neta-chevron");
  header.append(icon, title, count, bar, chevron);
  const list = element("div", "neta-todo-list");
  list.setAttribute("role", "list");
  root.append(header, list);
  el.append(root);

  const rows = new Map<string, Row>();

  const removeToggle = makeToggle(header, () => {
    state.collapsed = !state.collapsed;
    render();
    options.onUserChange?.({ collapsed: state.collapsed });
  });

  function createRow(): Row {
    const rowRoot = element("div", "neta-todo-row neta-is-new");
    rowRoot.setAttribute("role", "listitem");
    const body = element("div", "neta-todo-row-body");
    const inner = element("div", "neta-todo-row-inner");
    const rowIcon = element("span", "neta-todo-status");
    const content = element("span", "neta-todo-content");
    const tag = element("span", "neta-tag neta-todo-tag");
    inner.append(rowIcon, content, tag);
    body.append(inner);
    rowRoot.append(body);
    // Drop the entry animation class once it has played, so re-ordering never replays it.
    rowRoot.addEventListener("animationend", () => rowRoot.classList.remove("neta-is-new"), { once: true });
    return { root: rowRoot, icon: rowIcon, content, tag };
  }

  function render(): void {
    const lang = state.lang;
    const items = state.todos;
    const total = items.length;
    const completed = items.filter((item) => item.status === "completed").length;
    root.classList.toggle("neta-is-empty", total === 0);
    root.classList.toggle("neta-is-collapsed", state.collapsed);
    root.lang = lang;
    title.textContent = t(lang, "plan");
    count.textContent = t(lang, "done_count", { k: completed, n: total });
    fill.style.width = `${total ? (completed / total) * 100 : 0}%`;
    header.setAttribute("aria-expanded", String(!state.collapsed));
    header.title = t(lang, state.collapsed ? "expand" : "collapse");

    const seen = new Set<string>();
    items.forEach((item, index) => {
      // Duplicate ids would share a row; key them by position after the first.
      const key = seen.has(item.id) ? `${item.id}\u0000${index}` : item.id;
      seen.add(key);
      let row = rows.get(key);
      if (!row) {
        row = createRow();
        rows.set(key, row);
      }
      const status = normalizeStatus(item.status);
      setModifier(row.root, "neta-todo-row-", STATUSES, status);
      row.root.dataset.id = item.id;
      row.root.dataset.status = status;
      row.root.classList.toggle("neta-is-hidden", state.collapsed && status !== "in_progress");
      const paused = status === "in_progress" && state.paused;
      row.root.classList.toggle("neta-is-paused", paused);
      row.icon.replaceChildren();
      row.icon.classList.toggle("neta-cross", status === "cancelled");
      if (status === "in_progress") row.icon.append(element("span", paused ? "neta-todo-paused-mark" : "neta-spinner"));
      row.icon.title = t(lang, paused ? "todo_paused" : STATUS_LABEL[status]);
      row.content.textContent = String(item.content ?? "");
      row.tag.textContent = t(lang, paused ? "todo_paused" : "in_progress");
      row.tag.classList.toggle("neta-tag-muted", paused);
      row.tag.hidden = status !== "in_progress";
      // appendChild moves an existing node: the DOM order follows the list's order.
      if (list.children[index] !== row.root) list.insertBefore(row.root, list.children[index] ?? null);
    });
    for (const [key, row] of rows) {
      if (!seen.has(key)) {
        row.root.remove();
        rows.delete(key);
      }
    }
  }

  render();

  return {
    update(patch) {
      if (patch.todos !== undefined) state.todos = Array.isArray(patch.todos) ? patch.todos : [];
      if (patch.collapsed !== undefined) state.collapsed = Boolean(patch.collapsed);
      if (patch.paused !== undefined) state.paused = Boolean(patch.paused);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      removeToggle();
      root.remove();
    },
  };
}
