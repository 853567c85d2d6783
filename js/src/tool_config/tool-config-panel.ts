/**
 * The per-agent tool configuration panel (seed 001 §7): a summary, the tools the agent
 * ends up with, then every tool by category with one switch meaning "available to this
 * agent". Search, a state filter and a core-only filter narrow the list; three bulk
 * operations reset overrides.
 *
 * The panel holds no opinion of its own: the kernel resolves the config after every change
 * and sends `states`; this component renders them and turns clicks into requests
 * (`set_tool`, `bulk`, `forget`, `dismiss_warnings`, `preview`, `preview_as`,
 * `reset_preview`). A switch that was clicked shows as pending until the kernel's reply,
 * then shows whatever the kernel decided.
 *
 * "Preview as" picks another model (capabilities) or scene: the kernel re-resolves and sends
 * the previewed `states` while the agent's config stays as it is; a notice says so for as
 * long as it lasts, with a way back.
 *
 * Built for a few hundred tools: every row is built once and keyed by tool name; a state
 * change touches only the rows whose state changed, filters only toggle `hidden`.
 *
 * Split along its seams: `tool-config-panel-traits.ts` (what the kernel sends, trait by
 * trait), `tool-config-panel-row.ts` (one tool's row), `-mcp.ts` (a server's section),
 * `-preview.ts` ("preview as"), `-notices.ts` (unknown names, warnings), `-prompt.ts`
 * (the prompt preview), this file (the panel around them: its state and render pass),
 * each with its CSS beside it.
 * Every word comes from the shared label table (`i18n.ts`); reasons and config notes
 * arrive already rendered in the panel's language.
 */
import { createCollapsible, element, makeToggle, suppressNotebookShortcuts } from "../dom";
import { normalizeLang, t } from "../i18n";
// Each part brings its CSS, and the bundle keeps it in the order of these imports: the
// panel's own rules after "preview as" and the notices (its shared buttons win over them),
// before the rows, the prompt preview and the MCP sections.
import { createPreviewAsControl } from "./tool-config-panel-preview";
import { createErrorLine, createNotices } from "./tool-config-panel-notices";
import "./tool-config-panel.css";
import { categoryName, matchesFilter, PanelToolRow } from "./tool-config-panel-row";
import { createPromptPreview } from "./tool-config-panel-prompt";
import { McpServerSection } from "./tool-config-panel-mcp";
import {
  type AcknowledgeRequest,
  BULK_OPERATIONS,
  type BulkOperation,
  type BulkRequest,
  type PanelRequest,
  type SetToolRequest,
  applyPatch,
  STATE_FILTERS,
  type StateFilter,
  type ToolConfigPanelState,
  type ToolInfo,
} from "./tool-config-panel-traits";
import type { Component, ComponentOptions } from "../types";

export { categoryName } from "./tool-config-panel-row";
export type * from "./tool-config-panel-traits";

export interface ToolConfigPanel extends Component<ToolConfigPanelState> {
  /** Where requests go (the anywidget binding sends them to the kernel). */
  setRequester(requester: PanelRequest): void;
}

const SEARCH_WRITE_DELAY_MS = 250;

interface CategoryView {
  node: HTMLElement;
  header: HTMLElement;
  title: HTMLElement;
  counts: HTMLElement;
  body: HTMLElement;
  setOpen: (open: boolean) => void;
  server: McpServerSection;
  removeToggle: () => void;
}

export function createToolConfigPanel(el: HTMLElement, options: ComponentOptions<ToolConfigPanelState> = {}): ToolConfigPanel {
  const state: ToolConfigPanelState = {
    tools: [],
    states: {},
    enabled_tools: [],
    categories: [],
    summary: {},
    unknown: [],
    warnings: [],
    search: "",
    state_filter: "all",
    core_only: false,
    collapsed: [],
    preview_options: {},
    previewing_as: null,
    mcp_servers: [],
    lang: normalizeLang(options.lang),
  };
  let requester: PanelRequest | null = null;
  const cleanups: (() => void)[] = [];

  function listen<K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, handler: (event: HTMLElementEventMap[K]) => void): void {
    node.addEventListener(type, handler);
    cleanups.push(() => node.removeEventListener(type, handler));
  }

  // --- static DOM ----------------------------------------------------------------------
  const root = element("div", "neta-root neta-tool-config");

  const summary = element("div", "neta-tc-summary");
  const summaryCount = element("span", "neta-tc-summary-count");
  const summaryText = element("span", "neta-tc-summary-text");
  const summaryTotal = element("span", "neta-tc-summary-sub");
  const summaryCoreCount = element("span", "neta-tc-summary-sub");
  const summaryFigures = element("div", "neta-tc-summary-figures");
  summaryFigures.append(summaryCount, summaryText, summaryTotal, summaryCoreCount);
  const scope = element("span", "neta-tc-scope");
  const scopeIcon = element("span", "neta-tc-scope-icon");
  scopeIcon.setAttribute("aria-hidden", "true");
  const scopeText = element("span");
  scope.append(scopeIcon, scopeText);
  summary.append(summaryFigures, scope);

  const errorLine = createErrorLine(listen, () => state.lang);

  const notices = createNotices({ send: (kind, payload) => send(kind, payload), listen });

  const enabledSection = element("section", "neta-tc-enabled");
  const enabledTitle = element("div", "neta-tc-section-title");
  const enabledTitleText = element("span");
  const enabledTitleCount = element("span", "neta-tc-count-badge");
  enabledTitle.append(enabledTitleText, enabledTitleCount);
  const enabledList = element("div", "neta-tc-chips");
  const enabledEmpty = element("div", "neta-tc-empty-line");
  const unavailableTitle = element("div", "neta-tc-subtitle");
  const unavailableList = element("div", "neta-tc-chips");
  enabledSection.append(enabledTitle, enabledList, enabledEmpty, unavailableTitle, unavailableList);

  const toolbar = element("div", "neta-tc-toolbar");
  const searchBox = element("label", "neta-tc-search");
  const searchIcon = element("span", "neta-tc-search-icon");
  searchIcon.setAttribute("aria-hidden", "true");
  const searchInput = suppressNotebookShortcuts(element("input", "neta-tc-search-input"));
  searchInput.type = "search";
  searchInput.spellcheck = false;
  searchBox.append(searchIcon, searchInput);
  const filterGroup = element("div", "neta-tc-segmented");
  filterGroup.setAttribute("role", "radiogroup");
  const filterButtons = new Map<StateFilter, { button: HTMLButtonElement; text: HTMLElement; count: HTMLElement }>();
  for (const filter of STATE_FILTERS) {
    const button = element("button", "neta-tc-segment");
    button.type = "button";
    button.dataset.filter = filter;
    button.setAttribute("role", "radio");
    const text = element("span");
    const count = element("span", "neta-tc-segment-count");
    button.append(text, count);
    filterGroup.append(button);
    filterButtons.set(filter, { button, text, count });
    listen(button, "click", () => {
      if (state.state_filter === filter) return;
      state.state_filter = filter;
      options.onUserChange?.({ state_filter: filter });
      render();
    });
  }
  const coreOnly = element("label", "neta-tc-check");
  const coreOnlyInput = element("input");
  coreOnlyInput.type = "checkbox";
  const coreOnlyText = element("span");
  coreOnly.append(coreOnlyInput, coreOnlyText);
  toolbar.append(searchBox, filterGroup, coreOnly);

  const bulkBar = element("div", "neta-tc-bulk");
  const allTitle = element("div", "neta-tc-section-title");
  const allTitleText = element("span");
  allTitle.append(allTitleText);
  const bulkButtons = new Map<BulkOperation, HTMLButtonElement>();
  const bulkGroup = element("div", "neta-tc-bulk-buttons");
  for (const operation of BULK_OPERATIONS) {
    const button = element("button", "neta-tc-button");
    button.type = "button";
    button.dataset.op = operation;
    bulkGroup.append(button);
    bulkButtons.set(operation, button);
    listen(button, "click", () => {
      button.disabled = true;
      send("bulk", { op: operation } satisfies BulkRequest).finally(() => {
        button.disabled = false;
      });
    });
  }
  bulkBar.append(allTitle, bulkGroup);

  const categoryList = element("div", "neta-tc-categories");
  const noMatch = element("div", "neta-tc-no-match");
  const noMatchText = element("span");
  const clearFilters = element("button", "neta-tc-link-button");
  clearFilters.type = "button";
  noMatch.append(noMatchText, clearFilters);

  const promptPreview = createPromptPreview({ send: (kind) => send(kind), listen });

  const previewAs = createPreviewAsControl({
    send: (kind, payload, showFailure) => send(kind, payload, showFailure),
    listen,
    rerender: () => render(),
    lang: () => state.lang,
  });
  root.append(summary, previewAs.bar, previewAs.notice, errorLine.node, notices.unknownBar, notices.warningBar, enabledSection, toolbar, bulkBar, categoryList, noMatch, promptPreview.node);
  el.append(root);

  // --- requests ----------------------------------------------------------------------------

  /** Send a request; a failure shows in `showFailure` (by default the panel's error line). */
  function send(kind: string, payload: Record<string, unknown> = {}, showFailure: (message: string | null) => void = errorLine.show): Promise<unknown> {
    if (!requester) return Promise.resolve(undefined);
    return requester(kind, payload).then(
      (result) => {
        showFailure(null);
        return result;
      },
      (error: unknown) => {
        showFailure(error instanceof Error ? error.message : String(error));
        return undefined;
      },
    );
  }

  // --- tool rows -----------------------------------------------------------------------------
  const rows = new Map<string, PanelToolRow>();
  const categories = new Map<string, CategoryView>();
  let toolsByName = new Map<string, ToolInfo>();

  let changedByPreview = new Set<string>();
  function paintRow(row: PanelToolRow): void {
    const tool = toolsByName.get(row.toolName);
    if (tool) row.paint(tool, state.states[tool.name], state.lang, changedByPreview.has(tool.name));
  }
  const rowOptions = {
    onSwitch: (row: PanelToolRow, wanted: boolean) => send("set_tool", { name: row.toolName, enabled: wanted } satisfies SetToolRequest),
    repaint: paintRow,
  };

  function buildCategory(name: string): CategoryView {
    const node = element("section", "neta-tc-category");
    node.dataset.category = name;
    const header = element("div", "neta-tc-category-header");
    const chevron = element("span", "neta-chevron");
    const title = element("span", "neta-tc-category-title");
    const counts = element("span", "neta-tc-category-counts");
    header.append(chevron, title, counts);
    const body = element("div", "neta-tc-category-body");
    const fold = createCollapsible("", body);
    const server = new McpServerSection((tool, description) => void send("acknowledge_change", { name: tool, description } satisfies AcknowledgeRequest));
    node.append(header, server.node, fold.root);
    const removeToggle = makeToggle(header, () => {
      const folded = new Set(state.collapsed);
      if (folded.has(name)) folded.delete(name);
      else folded.add(name);
      state.collapsed = [...folded];
      options.onUserChange?.({ collapsed: state.collapsed });
      render();
    });
    return { node, header, title, counts, body, setOpen: fold.setOpen, server, removeToggle };
  }

  /** Rebuild the row index when the catalog changes; keep the nodes of tools that stay. */
  let indexedTools: ToolInfo[] | null = null;
  function syncCatalog(): void {
    if (indexedTools === state.tools) return;
    indexedTools = state.tools;
    toolsByName = new Map(state.tools.map((tool) => [tool.name, tool]));
    const wanted = new Set(state.tools.map((tool) => tool.name));
    for (const [name, row] of rows) {
      if (!wanted.has(name)) {
        row.destroy();
        rows.delete(name);
      }
    }
    const order: string[] = [];
    const byCategory = new Map<string, HTMLElement[]>();
    for (const tool of state.tools) {
      let row = rows.get(tool.name);
      if (!row) {
        row = new PanelToolRow(tool.name, rowOptions);
        rows.set(tool.name, row);
      }
      row.invalidate();
      if (!byCategory.has(tool.category)) {
        byCategory.set(tool.category, []);
        order.push(tool.category);
      }
      byCategory.get(tool.category)?.push(row.node);
    }
    for (const [name, view] of categories) {
      if (!byCategory.has(name)) {
        view.removeToggle();
        view.node.remove();
        categories.delete(name);
      }
    }
    const sections: HTMLElement[] = [];
    for (const name of order) {
      let view = categories.get(name);
      if (!view) {
        view = buildCategory(name);
        categories.set(name, view);
      }
      view.body.replaceChildren(...(byCategory.get(name) ?? []));
      sections.push(view.node);
    }
    categoryList.replaceChildren(...sections);
  }

  function chip(name: string, unavailable: boolean): HTMLElement {
    const tool = toolsByName.get(name);
    const verdict = state.states[name];
    const node = element("button", `neta-tc-chip${unavailable ? " neta-tc-chip-unavailable" : ""}`);
    node.type = "button";
    node.dataset.name = name;
    if (tool?.core) node.append(element("span", "neta-tc-chip-core", t(state.lang, "panel_core")));
    node.append(element("span", "neta-tc-chip-label", tool?.label || name));
    const reason = verdict?.reason ?? null;
    node.title = unavailable && reason ? `${name} — ${reason}` : name;
    return node;
  }

  function locate(name: string): void {
    const row = rows.get(name);
    const tool = toolsByName.get(name);
    if (!row || !tool) return;
    if (state.collapsed.includes(tool.category)) {
      state.collapsed = state.collapsed.filter((category) => category !== tool.category);
      options.onUserChange?.({ collapsed: state.collapsed });
      render();
    }
    if (row.node.hidden) return;
    row.node.scrollIntoView({ block: "center", behavior: "smooth" });
    row.node.classList.remove("neta-is-flashing");
    void row.node.offsetWidth;
    row.node.classList.add("neta-is-flashing");
  }
  const onChipClick = (event: MouseEvent) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>(".neta-tc-chip");
    if (target?.dataset.name) locate(target.dataset.name);
  };
  listen(enabledSection, "click", onChipClick);

  // --- search and filters ----------------------------------------------------------------
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  listen(searchInput, "input", () => {
    state.search = searchInput.value;
    render();
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => options.onUserChange?.({ search: state.search }), SEARCH_WRITE_DELAY_MS);
  });
  listen(coreOnlyInput, "change", () => {
    state.core_only = coreOnlyInput.checked;
    options.onUserChange?.({ core_only: state.core_only });
    render();
  });
  listen(clearFilters, "click", () => {
    state.search = "";
    state.state_filter = "all";
    state.core_only = false;
    clearTimeout(searchTimer);
    options.onUserChange?.({ search: "", state_filter: "all", core_only: false });
    render();
  });

  // --- render ---------------------------------------------------------------------------------
  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    syncCatalog();

    // Summary (seed §7.1 layer 1).
    const counts = state.summary;
    summaryCount.textContent = String(counts.enabled ?? state.enabled_tools.length);
    // While previewing, the count is the previewed model's, and says so.
    summaryText.textContent = t(lang, state.previewing_as ? "panel_enabled_count_preview" : "panel_enabled_count");
    summaryTotal.textContent = t(lang, "panel_of_total", { total: counts.total ?? state.tools.length });
    summaryCoreCount.textContent = t(lang, "panel_core_count", { n: counts.core ?? 0 });
    scopeText.textContent = t(lang, "panel_scope");
    errorLine.render(lang);

    changedByPreview = previewAs.render(lang, state.preview_options, state.previewing_as);
    root.classList.toggle("neta-is-previewing", state.previewing_as !== null);

    notices.render(lang, state.unknown, state.warnings);

    // Enabled section (layer 2): the resolver's final order.
    enabledTitleText.textContent = t(lang, state.previewing_as ? "panel_enabled_section_preview" : "panel_enabled_section");
    enabledTitleCount.textContent = String(state.enabled_tools.length);
    enabledList.replaceChildren(...state.enabled_tools.map((name) => chip(name, false)));
    enabledEmpty.textContent = t(lang, "panel_none_enabled");
    enabledEmpty.hidden = state.enabled_tools.length > 0;
    const final = new Set(state.enabled_tools);
    const unavailable = state.tools.filter((tool) => state.states[tool.name]?.on && !final.has(tool.name));
    unavailableTitle.textContent = t(lang, "panel_switched_on_unavailable");
    unavailableTitle.hidden = unavailable.length === 0;
    unavailableList.hidden = unavailable.length === 0;
    unavailableList.replaceChildren(...unavailable.map((tool) => chip(tool.name, true)));

    // Toolbar.
    searchInput.placeholder = t(lang, "panel_search");
    searchInput.setAttribute("aria-label", t(lang, "panel_search"));
    if (searchInput.value !== state.search) searchInput.value = state.search;
    filterGroup.setAttribute("aria-label", t(lang, "panel_filter_label"));
    for (const [filter, { button, text, count }] of filterButtons) {
      text.textContent = t(lang, `panel_filter_${filter}`);
      count.textContent = String(
        state.tools.filter((tool) => {
          const verdict = state.states[tool.name];
          return verdict && matchesFilter(filter, verdict, final.has(tool.name));
        }).length,
      );
      const active = filter === state.state_filter;
      button.classList.toggle("neta-is-active", active);
      button.setAttribute("aria-checked", String(active));
    }
    coreOnlyInput.checked = state.core_only;
    coreOnlyText.textContent = t(lang, "panel_core_only");
    allTitleText.textContent = t(lang, "panel_all_tools");
    for (const [operation, button] of bulkButtons) {
      button.textContent = t(lang, `panel_${operation}`);
      button.title = t(lang, `panel_${operation}_hint`);
    }

    // Cards: repaint what changed, then filter.
    const query = state.search.trim().toLowerCase();
    const terms = query ? query.split(/\s+/) : [];
    const visibleIn = new Map<string, number>();
    for (const tool of state.tools) {
      const row = rows.get(tool.name);
      if (!row) continue;
      row.paint(tool, state.states[tool.name], lang, changedByPreview.has(tool.name));
      const visible =
        matchesFilter(state.state_filter, state.states[tool.name], final.has(tool.name)) &&
        (!state.core_only || tool.core) &&
        terms.every((term) => row.haystack.includes(term));
      row.node.hidden = !visible;
      visibleIn.set(tool.category, (visibleIn.get(tool.category) ?? 0) + (visible ? 1 : 0));
    }
    const categoryCounts = new Map(state.categories.map((item) => [item.name, item]));
    const serverOf = new Map(state.mcp_servers.map((server) => [server.category, server]));
    let anyVisible = false;
    for (const [name, view] of categories) {
      view.server.paint(serverOf.get(name), lang);
      const count = categoryCounts.get(name);
      const total = count?.count ?? 0;
      view.title.textContent = categoryName(lang, name);
      view.counts.textContent = `${total === 1 ? t(lang, "panel_tool_count_one") : t(lang, "panel_tool_count", { n: total })} · ${t(lang, "panel_enabled_in_category", { n: count?.enabled ?? 0 })}`;
      const shown = (visibleIn.get(name) ?? 0) > 0;
      anyVisible ||= shown;
      view.node.hidden = !shown;
      const folded = state.collapsed.includes(name);
      view.node.classList.toggle("neta-is-collapsed", folded);
      view.setOpen(!folded);
      view.header.setAttribute("aria-expanded", String(!folded));
      view.header.title = t(lang, folded ? "expand" : "collapse");
    }
    noMatch.hidden = anyVisible || state.tools.length === 0;
    noMatchText.textContent = t(lang, "panel_no_match");
    clearFilters.textContent = t(lang, "panel_clear_filters");

    promptPreview.render(lang, state.enabled_tools);
  }

  render();

  // Trait changes arrive one by one for a single kernel update; paint once for all of them.
  let scheduled = false;
  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      render();
    });
  }

  return {
    update(patch) {
      applyPatch(state, patch);
      schedule();
    },
    setRequester(next) {
      requester = next;
    },
    destroy() {
      errorLine.destroy();
      clearTimeout(searchTimer);
      promptPreview.destroy();
      for (const cleanup of cleanups) cleanup();
      for (const view of categories.values()) view.removeToggle();
      for (const row of rows.values()) row.destroy();
      root.remove();
    },
  };
}
