/**
 * The session list (seed 002 §10): newest first; each row shows the title, the plan badge
 * `📋 k/N`, and either a running dot with "Running…" or the last message. Clicking a row
 * asks the kernel to open that session in the chat view; "New chat" starts an empty one.
 * Rows are keyed by id and updated in place. A failed request shows next to what was
 * clicked: on the row, or under the header for "New chat". Knows nothing of anywidget.
 * The wire shapes have Python twins (TypedDicts of the same names) in
 * neta_nb/widgets/chat/session_sidebar.py.
 */
import "./session-sidebar.css";
import { element, makeToggle } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { createInlineError, type InlineError } from "../inline-error";
import type { Component, ComponentOptions } from "../types";
import { formatUsd } from "../cards/token-stats";

export interface SessionRow {
  id: string;
  title: string;
  agent: string;
  running: boolean;
  /** The turn runs in another process (another kernel): it cannot be taken over here. */
  elsewhere: boolean;
  last_message: string;
  todo: TodoBadge | null;
  updated_at: number;
  message_count: number;
  /** Sub-agent sessions its turns ran; they are not listed themselves. */
  child_count: number;
  /** What the session has cost so far in USD; null: unknown (no price). */
  cost_usd: number | null;
}

/** The plan badge of a row (Python twin: `TodoBadge`). */
export interface TodoBadge {
  completed: number;
  total: number;
}

export interface SessionSidebarState {
  sessions: SessionRow[];
  active: string;
  can_open: boolean;
  height: string;
  lang: Lang;
}

/** `open`: show this stored session in the chat view. */
export interface OpenRequest {
  session_id: string;
}

/** `rename`: the user's title for a session; blank restores the automatic one. */
export interface RenameRequest {
  session_id: string;
  title: string;
}

/** The session the chat view shows now (the reply to `open`, `new_chat`, `switch_agent`). */
export interface SessionReply {
  session_id: string;
}

export interface SessionSidebarActions {
  open(sessionId: string): Promise<unknown>;
  newChat(): Promise<unknown>;
}

export interface SessionSidebarOptions extends ComponentOptions<SessionSidebarState> {
  actions?: Partial<SessionSidebarActions>;
}

interface RowView {
  root: HTMLDivElement;
  title: HTMLDivElement;
  subtitle: HTMLDivElement;
  error: InlineError;
  removeToggle: () => void;
  signature: string;
}

export function createSessionSidebar(el: HTMLElement, options: SessionSidebarOptions = {}): Component<SessionSidebarState> {
  const actions = options.actions ?? {};
  const state: SessionSidebarState = { sessions: [], active: "", can_open: false, height: "640px", lang: normalizeLang(options.lang) };

  const root = element("div", "neta-root neta-sidebar");
  const header = element("div", "neta-sidebar-header");
  const heading = element("span", "neta-sidebar-heading");
  const newButton = element("button", "neta-sidebar-new");
  newButton.type = "button";
  header.append(heading, newButton);
  const list = element("div", "neta-sidebar-list");
  list.setAttribute("role", "list");
  const empty = element("div", "neta-sidebar-empty");
  const lang = () => state.lang;
  const newError = createInlineError(lang, "neta-sidebar-error");
  root.append(header, newError.root, list, empty);
  el.append(root);

  const rows = new Map<string, RowView>();

  function clearErrors(): void {
    newError.clear();
    for (const row of rows.values()) row.error.clear();
  }

  const onNew = () => {
    clearErrors();
    newButton.disabled = true;
    void actions
      .newChat?.()
      .catch(newError.show)
      .finally(() => {
        newButton.disabled = false;
      });
  };
  newButton.addEventListener("click", onNew);

  function createRow(id: string): RowView {
    const rowRoot = element("div", "neta-sidebar-item");
    rowRoot.setAttribute("role", "listitem");
    rowRoot.dataset.id = id;
    const title = element("div", "neta-sidebar-title");
    const subtitle = element("div", "neta-sidebar-subtitle");
    const error = createInlineError(lang, "neta-sidebar-error");
    rowRoot.append(title, subtitle, error.root);
    const removeToggle = makeToggle(rowRoot, () => {
      if (!state.can_open || id === state.active || rowRoot.classList.contains("neta-is-opening")) return;
      clearErrors();
      rowRoot.classList.add("neta-is-opening");
      void actions
        .open?.(id)
        .catch(error.show)
        .finally(() => rowRoot.classList.remove("neta-is-opening"));
    });
    return { root: rowRoot, title, subtitle, error, removeToggle, signature: "" };
  }

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    root.style.setProperty("--neta-sidebar-height", state.height || "640px");
    heading.textContent = t(lang, "chats");
    newButton.textContent = `+ ${t(lang, "new_chat")}`;
    newButton.hidden = !state.can_open;
    empty.textContent = t(lang, "no_sessions");
    empty.hidden = state.sessions.length > 0;
    const seen = new Set<string>();
    state.sessions.forEach((session, index) => {
      seen.add(session.id);
      let row = rows.get(session.id);
      if (!row) {
        row = createRow(session.id);
        rows.set(session.id, row);
      }
      row.root.classList.toggle("neta-is-active", session.id === state.active);
      row.root.classList.toggle("neta-is-running", session.running);
      row.root.setAttribute("aria-current", String(session.id === state.active));
      const signature = JSON.stringify([session, lang]);
      if (signature !== row.signature) {
        row.signature = signature;
        row.title.textContent = session.title;
        row.root.title = session.agent ? `${session.title} · ${session.agent}` : session.title;
        const parts: HTMLElement[] = [];
        if (session.todo && session.todo.total > 0) {
          // The seed's 📋 badge, drawn in CSS: emoji fonts are missing on many systems.
          const badge = element("span", "neta-sidebar-todo");
          const icon = element("span", "neta-sidebar-todo-icon");
          icon.setAttribute("aria-hidden", "true");
          badge.append(icon, element("span", undefined, `${session.todo.completed}/${session.todo.total}`));
          badge.classList.toggle("neta-is-complete", session.todo.completed === session.todo.total);
          parts.push(badge);
        }
        const children = Math.max(0, Math.floor(Number(session.child_count) || 0));
        if (children > 0) {
          const crew = element("span", "neta-sidebar-children", t(lang, "sidebar_children", { n: children }));
          crew.title = t(lang, "sidebar_children_hint", { n: children });
          parts.push(crew);
        }
        if (typeof session.cost_usd === "number" && session.cost_usd > 0) {
          parts.push(element("span", "neta-sidebar-cost", formatUsd(session.cost_usd)));
        }
        if (session.running) {
          parts.push(element("span", "neta-sidebar-running-dot"),
            element("span", "neta-sidebar-running", t(lang, session.elsewhere ? "running_elsewhere" : "running")));
        } else {
          parts.push(element("span", "neta-sidebar-last", session.last_message));
        }
        row.subtitle.replaceChildren(...parts);
      }
      if (list.children[index] !== row.root) list.insertBefore(row.root, list.children[index] ?? null);
    });
    for (const [id, row] of rows) {
      if (!seen.has(id)) {
        row.removeToggle();
        row.root.remove();
        rows.delete(id);
      }
    }
  }

  render();

  return {
    update(patch) {
      if (patch.sessions !== undefined) state.sessions = Array.isArray(patch.sessions) ? patch.sessions : [];
      if (patch.active !== undefined) state.active = String(patch.active ?? "");
      if (patch.can_open !== undefined) state.can_open = Boolean(patch.can_open);
      if (patch.height !== undefined) state.height = patch.height;
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      newButton.removeEventListener("click", onNew);
      for (const row of rows.values()) row.removeToggle();
      root.remove();
    },
  };
}
