/**
 * The session list (seed 002 §10): newest first; each row shows the title, the plan badge
 * `📋 k/N`, and either a running dot with "Running…" or the last message. Clicking a row
 * asks the kernel to open that session in the chat view; "New chat" starts an empty one.
 * Rows are keyed by id and updated in place. A failed request shows next to what was
 * clicked: on the row, or under the header for "New chat". A search box at the top writes
 * `query` (debounced; the kernel answers with the matching rows); a double-click on a title,
 * or F2 on a focused row, renames the session in place (`rename`); a row's delete button (or
 * the Delete key) asks in the row, then `delete`s it, and an Undo bar offers it back
 * (./sidebar-delete.ts). Knows nothing of anywidget.
 * The wire shapes have Python twins (TypedDicts of the same names) in
 * neta_nb/widgets/chat/panels/session_sidebar.py.
 */
import "./session-sidebar.css";
import { element, makeToggle, suppressNotebookShortcuts, svgIcon } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { createInlineError, type InlineError } from "../inline-error";
import type { Component, ComponentOptions } from "../types";
import { formatUsd } from "../cards/token-stats";
import { createRowDelete, createUndoBar, type DeletedSession, type RowDelete } from "./sidebar-delete";

export type { DeleteRequest, DeletedSession } from "./sidebar-delete";

export interface SessionRow {
  id: string;
  title: string;
  /** No title yet (no prompt, no rename): shown as "New chat" in the view's language. */
  untitled: boolean;
  agent: string;
  running: boolean;
  /** The turn runs in another process (another kernel): it cannot be taken over here. */
  elsewhere: boolean;
  last_message: string;
  todo: TodoBadge | null;
  /** When the session (a branch: the fork) was made, in seconds since the epoch. */
  created_at: number;
  updated_at: number;
  message_count: number;
  /** Sub-agent sessions its turns ran; they are not listed themselves. */
  child_count: number;
  /** What the session has cost so far in USD; null: unknown (no price). */
  cost_usd: number | null;
  /** A branch's: the session it was forked from (`session.fork`). */
  branch_of: string | null;
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
  /** What the search box holds; the kernel lists the sessions matching it. */
  query: string;
  /** The session just deleted, which Undo brings back (the trait is `{}` when none is). */
  deleted: DeletedSession | null;
}

/** How long typing must pause before the query goes to the kernel. */
export const SEARCH_DEBOUNCE_MS = 200;

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
  rename(sessionId: string, title: string): Promise<unknown>;
  delete(sessionId: string): Promise<unknown>;
  undoDelete(): Promise<unknown>;
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
  removeRename: () => void;
  signature: string;
  /** The title being renamed to, shown until the list catches up (or the rename fails). */
  pendingTitle: string | null;
  /** The open rename input, if any. */
  editor: HTMLInputElement | null;
  remover: RowDelete;
  renameButton: HTMLButtonElement | null;
}

const PENCIL = ["M10.5 2.5l3 3L6 13H3v-3z", "M9 4l3 3"];

export function createSessionSidebar(el: HTMLElement, options: SessionSidebarOptions = {}): Component<SessionSidebarState> {
  const actions = options.actions ?? {};
  const state: SessionSidebarState = { sessions: [], active: "", can_open: false, height: "640px", lang: normalizeLang(options.lang), query: "", deleted: null };

  const root = element("div", "neta-root neta-sidebar");
  const header = element("div", "neta-sidebar-header");
  const heading = element("span", "neta-sidebar-heading");
  const newButton = element("button", "neta-sidebar-new");
  newButton.type = "button";
  header.append(heading, newButton);
  const searchBox = element("div", "neta-sidebar-search");
  const search = suppressNotebookShortcuts(element("input", "neta-sidebar-search-input"));
  search.type = "search";
  search.spellcheck = false;
  search.autocomplete = "off";
  searchBox.append(search);
  const list = element("div", "neta-sidebar-list");
  list.setAttribute("role", "list");
  const empty = element("div", "neta-sidebar-empty");
  const lang = () => state.lang;
  const newError = createInlineError(lang, "neta-sidebar-error");
  const undoBar = createUndoBar(lang, newError, () => actions.undoDelete?.() ?? Promise.resolve());
  root.append(header, searchBox, undoBar.root, newError.root, list, empty);
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

  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  function sendQuery(): void {
    if (searchTimer !== undefined) clearTimeout(searchTimer);
    searchTimer = undefined;
    if (search.value === state.query) return;
    state.query = search.value;
    options.onUserChange?.({ query: state.query });
  }
  const onSearchInput = () => {
    if (searchTimer !== undefined) clearTimeout(searchTimer);
    searchTimer = setTimeout(sendQuery, SEARCH_DEBOUNCE_MS);
  };
  const onSearchKey = (event: KeyboardEvent) => {
    if (event.key === "Escape") {
      event.preventDefault();
      search.value = "";
      sendQuery();
    } else if (event.key === "Enter") {
      event.preventDefault();
      sendQuery();
    }
  };
  search.addEventListener("input", onSearchInput);
  search.addEventListener("keydown", onSearchKey);

  function createRow(id: string): RowView {
    const rowRoot = element("div", "neta-sidebar-item");
    rowRoot.setAttribute("role", "listitem");
    rowRoot.dataset.id = id;
    const title = element("div", "neta-sidebar-title");
    const subtitle = element("div", "neta-sidebar-subtitle");
    const error = createInlineError(lang, "neta-sidebar-error");
    rowRoot.append(title, subtitle, error.root);
    const remover = createRowDelete(rowRoot, subtitle, lang, error, () => actions.delete?.(id) ?? Promise.resolve());
    remover.button.hidden = !actions.delete;
    // Rename shows itself on hover beside Delete (double-click and F2 do the same).
    const renameButton = element("button", "neta-sidebar-rename-button");
    renameButton.type = "button";
    renameButton.tabIndex = -1; // the row is the tab stop: F2 on it, or a pointer on this
    renameButton.append(svgIcon("neta-sidebar-rename-icon", PENCIL));
    renameButton.hidden = !actions.rename;
    const tools = element("div", "neta-sidebar-row-tools");
    tools.append(renameButton, remover.button);
    rowRoot.append(tools);
    const removeToggle = makeToggle(rowRoot, () => {
      if (view.editor || remover.asking) return; // a click or a key inside the rename input
      if (!state.can_open || id === state.active || rowRoot.classList.contains("neta-is-opening")) return;
      clearErrors();
      rowRoot.classList.add("neta-is-opening");
      void actions
        .open?.(id)
        .catch(error.show)
        .finally(() => rowRoot.classList.remove("neta-is-opening"));
    });
    const view: RowView = { root: rowRoot, title, subtitle, error, removeToggle, removeRename: () => undefined, signature: "", pendingTitle: null, editor: null, remover, renameButton: null };
    const onDoubleClick = (event: MouseEvent) => {
      event.preventDefault();
      event.stopPropagation();
      startRename(id, view);
    };
    const onRowKey = (event: KeyboardEvent) => {
      if (event.key === "F2" && event.target === rowRoot && !view.editor) {
        event.preventDefault();
        startRename(id, view);
      } else if (event.key === "Delete" && event.target === rowRoot && !view.editor && actions.delete) {
        event.preventDefault();
        remover.ask();
      }
    };
    const onRenameClick = (event: MouseEvent) => {
      event.preventDefault();
      event.stopPropagation(); // not a click on the row: that would open the session
      startRename(id, view);
    };
    title.addEventListener("dblclick", onDoubleClick);
    renameButton.addEventListener("click", onRenameClick);
    rowRoot.addEventListener("keydown", onRowKey);
    view.renameButton = renameButton;
    view.removeRename = () => {
      title.removeEventListener("dblclick", onDoubleClick);
      renameButton.removeEventListener("click", onRenameClick);
      rowRoot.removeEventListener("keydown", onRowKey);
      remover.destroy();
    };
    return view;
  }

  function shownTitle(session: SessionRow): string {
    return session.untitled ? t(state.lang, "new_chat") : session.title;
  }

  function sessionTitle(id: string): string {
    const session = state.sessions.find((other) => other.id === id);
    return session ? shownTitle(session) : "";
  }

  /** Turn the row's title into an input; Enter or blur sends `rename`, Escape cancels. */
  function startRename(id: string, row: RowView): void {
    if (row.editor || !actions.rename) return;
    clearErrors();
    const input = suppressNotebookShortcuts(element("input", "neta-sidebar-rename"));
    input.type = "text";
    input.spellcheck = false;
    input.value = row.pendingTitle ?? sessionTitle(id);
    input.setAttribute("aria-label", t(state.lang, "rename_session"));
    input.placeholder = t(state.lang, "rename_placeholder");
    row.editor = input;
    row.root.classList.add("neta-is-renaming");
    row.title.replaceChildren(input);
    let finished = false;
    const finish = (commit: boolean) => {
      if (finished) return;
      finished = true;
      input.removeEventListener("keydown", onKey);
      input.removeEventListener("blur", onBlur);
      row.editor = null;
      row.root.classList.remove("neta-is-renaming");
      const before = sessionTitle(id);
      const wanted = input.value.trim();
      if (commit && wanted !== before) {
        // Shown at once; a blank title's automatic one comes with the kernel's list.
        row.pendingTitle = wanted || before;
        row.root.classList.add("neta-is-saving");
        void actions.rename?.(id, wanted)
          .catch((error: unknown) => {
            row.pendingTitle = null;
            row.error.show(error);
          })
          .finally(() => {
            row.pendingTitle = null;
            row.root.classList.remove("neta-is-saving");
            showTitle(id, row);
          });
      }
      // Enter and Escape give the focus back to the row; a blur leaves it where it went.
      showTitle(id, row);
    };
    const onKey = (event: KeyboardEvent) => {
      event.stopPropagation(); // Enter / Space must not reach the row's toggle
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
        row.root.focus();
      } else if (event.key === "Escape") {
        event.preventDefault();
        finish(false);
        row.root.focus();
      }
    };
    const onBlur = () => finish(true);
    const stop = (event: Event) => event.stopPropagation();
    input.addEventListener("keydown", onKey);
    input.addEventListener("blur", onBlur);
    input.addEventListener("click", stop);
    input.addEventListener("dblclick", stop);
    input.focus();
    input.select();
  }

  function showTitle(id: string, row: RowView): void {
    if (row.editor) return;
    row.title.textContent = row.pendingTitle ?? sessionTitle(id);
  }

  /**
   * Put the rows in `order`. A row being renamed is never moved (moving a node blurs the
   * input inside it, which would end the rename): the others are placed around it.
   */
  function placeRows(order: RowView[]): void {
    const pinned = order.findIndex((row) => row.editor !== null);
    if (pinned < 0) {
      order.forEach((row, index) => {
        if (list.children[index] !== row.root) list.insertBefore(row.root, list.children[index] ?? null);
      });
      return;
    }
    for (let i = pinned - 1; i >= 0; i--) {
      const next = order[i + 1].root;
      if (order[i].root.nextSibling !== next) list.insertBefore(order[i].root, next);
    }
    for (let i = pinned + 1; i < order.length; i++) {
      const previous = order[i - 1].root;
      if (previous.nextSibling !== order[i].root) list.insertBefore(order[i].root, previous.nextSibling);
    }
  }

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    root.style.setProperty("--neta-sidebar-height", state.height || "640px");
    heading.textContent = t(lang, "chats");
    newButton.textContent = `+ ${t(lang, "new_chat")}`;
    newButton.hidden = !state.can_open;
    search.placeholder = t(lang, "search_sessions");
    search.setAttribute("aria-label", t(lang, "search_sessions"));
    if (document.activeElement !== search && searchTimer === undefined) search.value = state.query;
    const query = state.query.trim();
    root.classList.toggle("neta-is-searching", query !== "");
    empty.textContent = query ? t(lang, "no_session_matches", { query }) : t(lang, "no_sessions");
    empty.hidden = state.sessions.length > 0;
    undoBar.update(state.deleted);
    const seen = new Set<string>();
    const order: RowView[] = [];
    for (const session of state.sessions) {
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
        row.remover.setLang();
        if (row.renameButton) {
          row.renameButton.title = t(lang, "rename_session_hint");
          row.renameButton.setAttribute("aria-label", t(lang, "rename_session"));
        }
        showTitle(session.id, row);
        const title = shownTitle(session);
        row.root.title = session.agent ? `${title} · ${session.agent}` : title;
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
        if (session.branch_of) {
          const parent = state.sessions.find((other) => other.id === session.branch_of);
          // A branch has its parent's title and, at first, its messages: the row says when
          // it was made (short, so its last message still shows), its tooltip of what.
          const when = madeAt(session.created_at, lang);
          const branch = element("span", "neta-sidebar-branch",
            when ? t(lang, "sidebar_branch_when", { when }) : t(lang, "sidebar_branch"));
          branch.title = parent
            ? when
              ? t(lang, "sidebar_branch_of_when", { title: shownTitle(parent), when })
              : t(lang, "sidebar_branch_of", { title: shownTitle(parent) })
            : t(lang, "sidebar_branch");
          parts.push(branch);
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
      order.push(row);
    }
    placeRows(order);
    for (const [id, row] of rows) {
      if (!seen.has(id)) {
        row.removeToggle();
        row.removeRename();
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
      if (patch.query !== undefined) state.query = String(patch.query ?? "");
      if (patch.deleted !== undefined) {
        const deleted = patch.deleted as Partial<DeletedSession> | null;
        state.deleted = deleted && typeof deleted.id === "string" && deleted.id ? { id: deleted.id, title: String(deleted.title ?? "") } : null;
      }
      render();
    },
    destroy() {
      newButton.removeEventListener("click", onNew);
      if (searchTimer !== undefined) clearTimeout(searchTimer);
      search.removeEventListener("input", onSearchInput);
      search.removeEventListener("keydown", onSearchKey);
      for (const row of rows.values()) {
        row.removeToggle();
        row.removeRename();
      }
      undoBar.destroy();
      root.remove();
    },
  };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `14:02` today, `Dec 5 14:02` (`12月5日 14:02`) another day, local time (Python twin:
 * `_made_at` in session_sidebar.py); "" for no time. */
export function madeAt(seconds: number, lang: Lang, now: Date = new Date()): string {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds <= 0) return "";
  const made = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  const clock = `${pad(made.getHours())}:${pad(made.getMinutes())}`;
  if (made.toDateString() === now.toDateString()) return clock;
  if (lang === "zh-CN") return `${made.getMonth() + 1}月${made.getDate()}日 ${clock}`;
  return `${MONTHS[made.getMonth()]} ${made.getDate()} ${clock}`;
}
