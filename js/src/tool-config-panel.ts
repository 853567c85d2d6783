/**
 * The per-agent tool configuration panel (seed 001 §7): a summary, the tools the agent
 * ends up with, then every tool by category with one switch meaning "available to this
 * agent". Search, a state filter and a core-only filter narrow the list; three bulk
 * operations reset overrides.
 *
 * The panel holds no opinion of its own: the kernel resolves the config after every change
 * and sends `states`; this component renders them and turns clicks into requests
 * (`set_tool`, `bulk`, `forget`, `dismiss_warnings`, `preview`). A switch that was clicked
 * shows as pending until the kernel's reply, then shows whatever the kernel decided.
 *
 * Built for a few hundred tools: every card is built once and keyed by tool name; a state
 * change touches only the cards whose state changed, filters only toggle `hidden`.
 */
import "./tool-config-panel.css";
import { element, makeToggle } from "./dom";
import { normalizeLang, type Lang } from "./i18n";
import type { Component, ComponentOptions } from "./types";

export type ToolStateName = "default_enabled" | "agent_enabled" | "agent_disabled" | "globally_disabled" | "available";
export type StateFilter = "all" | "enabled" | "off" | "globally_disabled";
export type BulkOperation = "restore_core_defaults" | "clear_extra_enabled" | "clear_disabled_overrides";

export interface ToolInfo {
  name: string;
  label: string;
  description: string;
  category: string;
  capabilities: string[];
  scenes: string[] | null;
  core: boolean;
  visibility: string;
  requires_approval: boolean;
}

export interface ToolVerdict {
  state: ToolStateName;
  /** The agent's switch: on by default or switched on. */
  on: boolean;
  /** In the final set (after the capability / scene filter). */
  available: boolean;
  reason: string | null;
  reason_zh: string | null;
}

export interface CategoryCount {
  name: string;
  count: number;
  enabled: number;
}

export interface ToolConfigSummary {
  enabled: number;
  total: number;
  core: number;
  extra_enabled: number;
  switched_off: number;
  globally_disabled: number;
  filtered_out: number;
}

export interface ToolConfigPanelState {
  tools: ToolInfo[];
  states: Record<string, ToolVerdict>;
  enabled_tools: string[];
  categories: CategoryCount[];
  summary: Partial<ToolConfigSummary>;
  unknown: string[];
  warnings: string[];
  search: string;
  state_filter: StateFilter;
  core_only: boolean;
  collapsed: string[];
  lang: Lang;
}

export type PanelRequest = (kind: string, payload?: Record<string, unknown>) => Promise<unknown>;

export interface ToolConfigPanel extends Component<ToolConfigPanelState> {
  /** Where requests go (the anywidget binding sends them to the kernel). */
  setRequester(requester: PanelRequest): void;
}

interface PreviewResult {
  system_prompt: string;
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
}

// Seed 001 §4.2 / §7.3 / §7.4 wording. The agent-level action is "switch on / off for this
// agent" (对当前 Agent 启用 / 关闭); "disabled" (全局停用) is reserved for the global state.
const LABELS = {
  en: {
    enabled_count: "tools enabled",
    of_total: "of {total}",
    core_count: "{n} core",
    scope: "Only affects this agent",
    enabled_section: "Enabled for this agent",
    none_enabled: "No tool is enabled for this agent.",
    switched_on_unavailable: "Switched on but not available",
    all_tools: "All tools",
    search: "Search tools",
    filter_label: "Filter by state",
    filter_all: "All",
    filter_enabled: "Enabled",
    filter_off: "Switched off",
    filter_globally_disabled: "Globally disabled",
    core_only: "Core only",
    restore_core_defaults: "Restore core defaults",
    clear_extra_enabled: "Clear extra enabled",
    clear_disabled_overrides: "Clear switched-off overrides",
    restore_core_defaults_hint: "Core tools go back to enabled by default",
    clear_extra_enabled_hint: "Switch off every tool switched on for this agent",
    clear_disabled_overrides_hint: "Drop every tool switched off for this agent",
    tool_count: "{n} tools",
    tool_count_one: "1 tool",
    enabled_in_category: "{n} enabled",
    core: "Core",
    needs: "needs {what}",
    scene: "scene: {what}",
    approval: "asks first",
    default_enabled: "Enabled by default",
    agent_enabled: "Switched on for this agent",
    agent_disabled: "Switched off for this agent",
    globally_disabled: "Disabled globally",
    available: "Off for this agent",
    switch_label: "Available to this agent",
    switch_on: "Switch on for this agent",
    switch_off: "Switch off for this agent",
    read_only: "Disabled globally in tool management; read-only here",
    unknown: "This config names tools the catalog does not have:",
    forget: "Forget",
    forget_hint: "Remove '{name}' from this agent's config",
    warnings: "Config notes",
    dismiss: "Dismiss",
    no_match: "No tool matches the search and filters.",
    clear_filters: "Clear filters",
    preview: "Prompt preview",
    preview_hint: "the exact tool definitions the model receives",
    preview_loading: "Loading…",
    system_prompt: "System prompt",
    tool_definitions: "Tool definitions ({n})",
    request_failed: "The change was not applied: {error}",
    close: "Close",
    collapse: "Collapse",
    expand: "Expand",
  },
  "zh-CN": {
    enabled_count: "个工具已启用",
    of_total: "共 {total} 个",
    core_count: "核心工具 {n} 个",
    scope: "仅影响当前 Agent",
    enabled_section: "当前 Agent 已启用",
    none_enabled: "当前 Agent 没有启用任何工具。",
    switched_on_unavailable: "已开启但不可用",
    all_tools: "全部工具",
    search: "搜索工具",
    filter_label: "按状态筛选",
    filter_all: "全部",
    filter_enabled: "已启用",
    filter_off: "已关闭",
    filter_globally_disabled: "全局停用",
    core_only: "仅看核心工具",
    restore_core_defaults: "恢复核心默认",
    clear_extra_enabled: "清空额外启用",
    clear_disabled_overrides: "清空关闭覆盖",
    restore_core_defaults_hint: "核心工具恢复为默认启用",
    clear_extra_enabled_hint: "关闭所有为当前 Agent 额外启用的工具",
    clear_disabled_overrides_hint: "撤销所有对当前 Agent 的关闭",
    tool_count: "{n} 个工具",
    tool_count_one: "1 个工具",
    enabled_in_category: "已启用 {n}",
    core: "核心",
    needs: "需要 {what}",
    scene: "场景：{what}",
    approval: "需确认",
    default_enabled: "默认启用",
    agent_enabled: "已为当前 Agent 启用",
    agent_disabled: "已为当前 Agent 关闭",
    globally_disabled: "全局停用",
    available: "当前 Agent 未启用",
    switch_label: "当前 Agent 可用",
    switch_on: "对当前 Agent 启用",
    switch_off: "对当前 Agent 关闭",
    read_only: "已在工具管理中全局停用，此处只读",
    unknown: "配置中包含工具目录里不存在的工具：",
    forget: "移除",
    forget_hint: "从当前 Agent 的配置中移除「{name}」",
    warnings: "配置提示",
    dismiss: "知道了",
    no_match: "没有符合搜索和筛选条件的工具。",
    clear_filters: "清除筛选",
    preview: "Prompt 预览",
    preview_hint: "模型实际收到的工具定义",
    preview_loading: "加载中…",
    system_prompt: "系统提示词",
    tool_definitions: "工具定义（{n} 个）",
    request_failed: "修改未生效：{error}",
    close: "关闭",
    collapse: "收起",
    expand: "展开",
  },
} as const;

type LabelKey = keyof (typeof LABELS)["en"];

const CATEGORY_NAMES: Record<Lang, Record<string, string>> = {
  en: {
    base: "Base",
    planning: "Planning",
    interaction: "Interaction",
    memory: "Memory",
    skill: "Skill",
    crew: "Crew",
    vision: "Vision",
    document: "Document",
  },
  "zh-CN": {
    base: "基础",
    planning: "规划",
    interaction: "交互",
    memory: "记忆",
    skill: "技能",
    crew: "协作",
    vision: "视觉",
    document: "文档",
  },
};

const STATE_FILTERS: readonly StateFilter[] = ["all", "enabled", "off", "globally_disabled"];
const BULK_OPERATIONS: readonly BulkOperation[] = ["restore_core_defaults", "clear_extra_enabled", "clear_disabled_overrides"];
const TOOL_STATES: readonly ToolStateName[] = ["default_enabled", "agent_enabled", "agent_disabled", "globally_disabled", "available"];
const SEARCH_WRITE_DELAY_MS = 250;

function label(lang: Lang, key: LabelKey, params: Record<string, string | number> = {}): string {
  const template: string = LABELS[lang][key] ?? LABELS.en[key];
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ""));
}

export function categoryName(lang: Lang, category: string): string {
  const known = CATEGORY_NAMES[lang][category];
  if (known) return known;
  // A custom category is shown as registered, capitalised like the seed's in English.
  return lang === "en" ? category.charAt(0).toUpperCase() + category.slice(1) : category;
}

function matchesFilter(filter: StateFilter, verdict: ToolVerdict | undefined): boolean {
  if (!verdict || filter === "all") return true;
  if (filter === "enabled") return verdict.on;
  if (filter === "globally_disabled") return verdict.state === "globally_disabled";
  return !verdict.on && verdict.state !== "globally_disabled";
}

interface ToolCardView {
  node: HTMLElement;
  title: HTMLElement;
  name: HTMLElement;
  tags: HTMLElement;
  description: HTMLElement;
  stateText: HTMLElement;
  reason: HTMLElement;
  input: HTMLInputElement;
  /** What the card currently shows, so an unchanged card is not touched. */
  rendered: string;
  haystack: string;
  pending: boolean;
}

interface CategoryView {
  node: HTMLElement;
  header: HTMLElement;
  title: HTMLElement;
  counts: HTMLElement;
  body: HTMLElement;
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
  const summaryCore = element("span", "neta-tc-summary-sub");
  const summaryFigures = element("div", "neta-tc-summary-figures");
  summaryFigures.append(summaryCount, summaryText, summaryTotal, summaryCore);
  const scope = element("span", "neta-tc-scope");
  const scopeIcon = element("span", "neta-tc-scope-icon");
  scopeIcon.setAttribute("aria-hidden", "true");
  const scopeText = element("span");
  scope.append(scopeIcon, scopeText);
  summary.append(summaryFigures, scope);

  const errorBar = element("div", "neta-tc-notice neta-tc-error");
  errorBar.setAttribute("role", "alert");
  const errorText = element("span", "neta-tc-notice-text");
  const errorClose = element("button", "neta-tc-link-button");
  errorClose.type = "button";
  errorBar.append(errorText, errorClose);
  errorBar.hidden = true;

  const unknownBar = element("div", "neta-tc-notice neta-tc-unknown");
  const unknownText = element("span", "neta-tc-notice-text");
  const unknownList = element("span", "neta-tc-unknown-list");
  unknownBar.append(unknownText, unknownList);

  const warningBar = element("div", "neta-tc-notice neta-tc-warnings");
  const warningTitle = element("div", "neta-tc-notice-title");
  const warningList = element("ul", "neta-tc-warning-list");
  const warningDismiss = element("button", "neta-tc-link-button");
  warningDismiss.type = "button";
  const warningHead = element("div", "neta-tc-notice-head");
  warningHead.append(warningTitle, warningDismiss);
  warningBar.append(warningHead, warningList);

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
  const searchInput = element("input", "neta-tc-search-input");
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
      send("bulk", { op: operation }).finally(() => {
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

  const preview = element("details", "neta-tc-preview");
  const previewSummary = element("summary", "neta-tc-preview-summary");
  const previewTitle = element("span", "neta-tc-preview-title");
  const previewHint = element("span", "neta-tc-preview-hint");
  previewSummary.append(previewTitle, previewHint);
  const previewBody = element("div", "neta-tc-preview-body");
  preview.append(previewSummary, previewBody);

  root.append(summary, errorBar, unknownBar, warningBar, enabledSection, toolbar, bulkBar, categoryList, noMatch, preview);
  el.append(root);

  // --- requests ----------------------------------------------------------------------------
  let errorTimer: ReturnType<typeof setTimeout> | undefined;
  function showError(message: string | null): void {
    clearTimeout(errorTimer);
    errorBar.hidden = message === null;
    errorText.textContent = message === null ? "" : label(state.lang, "request_failed", { error: message });
    if (message !== null) errorTimer = setTimeout(() => showError(null), 8000);
  }
  listen(errorClose, "click", () => showError(null));

  function send(kind: string, payload: Record<string, unknown> = {}): Promise<unknown> {
    if (!requester) return Promise.resolve(undefined);
    return requester(kind, payload).then(
      (result) => {
        showError(null);
        return result;
      },
      (error: unknown) => {
        showError(error instanceof Error ? error.message : String(error));
        return undefined;
      },
    );
  }

  // --- tool cards ----------------------------------------------------------------------------
  const cards = new Map<string, ToolCardView>();
  const categories = new Map<string, CategoryView>();
  let toolsByName = new Map<string, ToolInfo>();

  function buildCard(tool: ToolInfo): ToolCardView {
    const node = element("div", "neta-tc-tool");
    node.dataset.name = tool.name;
    const main = element("div", "neta-tc-tool-main");
    const head = element("div", "neta-tc-tool-head");
    const title = element("span", "neta-tc-tool-label");
    const name = element("code", "neta-tc-tool-name");
    const tags = element("span", "neta-tc-tags");
    head.append(title, name, tags);
    const description = element("div", "neta-tc-tool-desc");
    const status = element("div", "neta-tc-tool-state");
    const dot = element("span", "neta-tc-dot");
    dot.setAttribute("aria-hidden", "true");
    const stateText = element("span", "neta-tc-state-text");
    const reason = element("span", "neta-tc-reason");
    status.append(dot, stateText, reason);
    main.append(head, description, status);

    const switchLabel = element("label", "neta-switch");
    const input = element("input", "neta-switch-input");
    input.type = "checkbox";
    input.setAttribute("role", "switch");
    const track = element("span", "neta-switch-track");
    track.setAttribute("aria-hidden", "true");
    switchLabel.append(input, track);
    node.append(main, switchLabel);

    const view: ToolCardView = { node, title, name, tags, description, stateText, reason, input, rendered: "", haystack: "", pending: false };
    const onChange = () => {
      const wanted = input.checked;
      view.pending = true;
      view.rendered = "";
      paintCard(tool, view);
      send("set_tool", { name: tool.name, enabled: wanted }).finally(() => {
        view.pending = false;
        view.rendered = "";
        // Whatever the kernel decided is in `states` by now (its state update is sent
        // before the reply); show that, not what was clicked.
        paintCard(tool, view);
      });
    };
    input.addEventListener("change", onChange);
    cleanups.push(() => input.removeEventListener("change", onChange));
    return view;
  }

  function tag(text: string, kind: string, title?: string): HTMLElement {
    const node = element("span", `neta-tag neta-tc-tag neta-tc-tag-${kind}`, text);
    if (title) node.title = title;
    return node;
  }

  function paintCard(tool: ToolInfo, view: ToolCardView): void {
    const lang = state.lang;
    const verdict = state.states[tool.name];
    const signature = JSON.stringify([lang, verdict, view.pending, tool]);
    if (signature === view.rendered) return;
    view.rendered = signature;
    const global = verdict?.state === "globally_disabled";
    const on = verdict?.on ?? false;
    const unavailable = on && verdict !== undefined && !verdict.available;
    const classes = view.node.classList;
    for (const name of TOOL_STATES) classes.toggle(`neta-tc-tool-${name}`, verdict?.state === name);
    classes.toggle("neta-tc-tool-on", on);
    classes.toggle("neta-tc-tool-unavailable", unavailable);
    classes.toggle("neta-is-pending", view.pending);

    view.title.textContent = tool.label || tool.name;
    view.name.textContent = tool.name;
    view.name.hidden = !tool.label || tool.label === tool.name;
    const tags: HTMLElement[] = [];
    if (tool.core) tags.push(tag(label(lang, "core"), "core"));
    tags.push(tag(categoryName(lang, tool.category), "category"));
    for (const capability of tool.capabilities) tags.push(tag(label(lang, "needs", { what: capability }), "capability"));
    if (tool.scenes) tags.push(tag(label(lang, "scene", { what: tool.scenes.join(", ") }), "scene"));
    if (tool.requires_approval) tags.push(tag(label(lang, "approval"), "approval"));
    view.tags.replaceChildren(...tags);
    // Descriptions are tool text: textContent only, never markup.
    view.description.textContent = tool.description;
    view.description.title = tool.description;
    view.description.hidden = !tool.description;

    const reason = verdict ? (lang === "zh-CN" ? verdict.reason_zh : verdict.reason) ?? "" : "";
    // A global disable is explained by the resolver's own sentence; the other states by
    // their words (seed §4.2), plus the reason when it adds something: a capability or
    // scene filter, or a core tool the agent does not inherit.
    view.stateText.textContent = !verdict ? "" : global && reason ? reason : label(lang, verdict.state);
    const showReason = Boolean(reason) && (unavailable || (verdict?.state === "available" && tool.core));
    view.reason.textContent = showReason ? reason : "";
    view.reason.hidden = !showReason;

    view.input.checked = view.pending ? view.input.checked : on;
    view.input.disabled = global || view.pending || !verdict;
    view.input.setAttribute("aria-label", `${label(lang, "switch_label")}: ${tool.label || tool.name}`);
    const switchTitle = global ? label(lang, "read_only") : label(lang, on ? "switch_off" : "switch_on");
    (view.input.parentElement as HTMLElement).title = switchTitle;
    view.haystack = [tool.name, tool.label, tool.description, tool.category, categoryName(lang, tool.category)].join("\n").toLowerCase();
  }

  function buildCategory(name: string): CategoryView {
    const node = element("section", "neta-tc-category");
    node.dataset.category = name;
    const header = element("div", "neta-tc-category-header");
    const chevron = element("span", "neta-chevron");
    const title = element("span", "neta-tc-category-title");
    const counts = element("span", "neta-tc-category-counts");
    header.append(chevron, title, counts);
    const collapsible = element("div", "neta-collapsible");
    const inner = element("div", "neta-collapsible-inner");
    const body = element("div", "neta-tc-category-body");
    inner.append(body);
    collapsible.append(inner);
    node.append(header, collapsible);
    const removeToggle = makeToggle(header, () => {
      const folded = new Set(state.collapsed);
      if (folded.has(name)) folded.delete(name);
      else folded.add(name);
      state.collapsed = [...folded];
      options.onUserChange?.({ collapsed: state.collapsed });
      render();
    });
    return { node, header, title, counts, body, removeToggle };
  }

  /** Rebuild the card index when the catalog changes; keep the nodes of tools that stay. */
  let indexedTools: ToolInfo[] | null = null;
  function syncCatalog(): void {
    if (indexedTools === state.tools) return;
    indexedTools = state.tools;
    toolsByName = new Map(state.tools.map((tool) => [tool.name, tool]));
    const wanted = new Set(state.tools.map((tool) => tool.name));
    for (const [name, view] of cards) {
      if (!wanted.has(name)) {
        view.node.remove();
        cards.delete(name);
      }
    }
    const order: string[] = [];
    const byCategory = new Map<string, HTMLElement[]>();
    for (const tool of state.tools) {
      let view = cards.get(tool.name);
      if (!view) {
        view = buildCard(tool);
        cards.set(tool.name, view);
      }
      view.rendered = "";
      if (!byCategory.has(tool.category)) {
        byCategory.set(tool.category, []);
        order.push(tool.category);
      }
      byCategory.get(tool.category)?.push(view.node);
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
    if (tool?.core) node.append(element("span", "neta-tc-chip-core", label(state.lang, "core")));
    node.append(element("span", "neta-tc-chip-label", tool?.label || name));
    const reason = verdict ? (state.lang === "zh-CN" ? verdict.reason_zh : verdict.reason) : null;
    node.title = unavailable && reason ? `${name} — ${reason}` : name;
    return node;
  }

  function locate(name: string): void {
    const view = cards.get(name);
    const tool = toolsByName.get(name);
    if (!view || !tool) return;
    if (state.collapsed.includes(tool.category)) {
      state.collapsed = state.collapsed.filter((category) => category !== tool.category);
      options.onUserChange?.({ collapsed: state.collapsed });
      render();
    }
    if (view.node.hidden) return;
    view.node.scrollIntoView({ block: "center", behavior: "smooth" });
    view.node.classList.remove("neta-is-flashing");
    void view.node.offsetWidth;
    view.node.classList.add("neta-is-flashing");
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

  // --- notices -------------------------------------------------------------------------------
  listen(warningDismiss, "click", () => {
    void send("dismiss_warnings");
  });
  listen(unknownList, "click", (event) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>("[data-forget]");
    if (target?.dataset.forget) void send("forget", { name: target.dataset.forget });
  });

  // --- prompt preview --------------------------------------------------------------------------
  let previewSeq = 0;
  let previewKey = "";
  function loadPreview(): void {
    const key = JSON.stringify([state.enabled_tools, state.lang]);
    if (!preview.open || key === previewKey) return;
    previewKey = key;
    const seq = (previewSeq += 1);
    if (!previewBody.hasChildNodes()) previewBody.append(element("div", "neta-tc-empty-line", label(state.lang, "preview_loading")));
    void send("preview").then((result) => {
      if (seq !== previewSeq || !result) return;
      const { system_prompt: systemPrompt, tools } = result as PreviewResult;
      const parts: HTMLElement[] = [];
      if (systemPrompt) {
        parts.push(element("div", "neta-tc-preview-label", label(state.lang, "system_prompt")));
        parts.push(element("pre", "neta-tc-code", systemPrompt));
      }
      parts.push(element("div", "neta-tc-preview-label", label(state.lang, "tool_definitions", { n: tools.length })));
      parts.push(element("pre", "neta-tc-code", JSON.stringify(tools, null, 2)));
      previewBody.replaceChildren(...parts);
    });
  }
  listen(preview, "toggle", () => loadPreview());

  // --- render ---------------------------------------------------------------------------------
  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    syncCatalog();

    // Summary (seed §7.1 layer 1).
    const counts = state.summary;
    summaryCount.textContent = String(counts.enabled ?? state.enabled_tools.length);
    summaryText.textContent = label(lang, "enabled_count");
    summaryTotal.textContent = label(lang, "of_total", { total: counts.total ?? state.tools.length });
    summaryCore.textContent = label(lang, "core_count", { n: counts.core ?? 0 });
    scopeText.textContent = label(lang, "scope");
    errorClose.textContent = label(lang, "close");

    // Notices.
    unknownBar.hidden = state.unknown.length === 0;
    unknownText.textContent = label(lang, "unknown");
    unknownList.replaceChildren(
      ...state.unknown.map((name) => {
        const item = element("span", "neta-tc-unknown-item");
        const button = element("button", "neta-tc-link-button", label(lang, "forget"));
        button.type = "button";
        button.dataset.forget = name;
        button.title = label(lang, "forget_hint", { name });
        item.append(element("code", undefined, name), button);
        return item;
      }),
    );
    warningBar.hidden = state.warnings.length === 0;
    warningTitle.textContent = label(lang, "warnings");
    warningDismiss.textContent = label(lang, "dismiss");
    warningList.replaceChildren(...state.warnings.map((warning) => element("li", undefined, warning)));

    // Enabled section (layer 2): the resolver's final order.
    enabledTitleText.textContent = label(lang, "enabled_section");
    enabledTitleCount.textContent = String(state.enabled_tools.length);
    enabledList.replaceChildren(...state.enabled_tools.map((name) => chip(name, false)));
    enabledEmpty.textContent = label(lang, "none_enabled");
    enabledEmpty.hidden = state.enabled_tools.length > 0;
    const final = new Set(state.enabled_tools);
    const unavailable = state.tools.filter((tool) => state.states[tool.name]?.on && !final.has(tool.name));
    unavailableTitle.textContent = label(lang, "switched_on_unavailable");
    unavailableTitle.hidden = unavailable.length === 0;
    unavailableList.hidden = unavailable.length === 0;
    unavailableList.replaceChildren(...unavailable.map((tool) => chip(tool.name, true)));

    // Toolbar.
    searchInput.placeholder = label(lang, "search");
    searchInput.setAttribute("aria-label", label(lang, "search"));
    if (searchInput.value !== state.search) searchInput.value = state.search;
    filterGroup.setAttribute("aria-label", label(lang, "filter_label"));
    const verdicts = state.tools.map((tool) => state.states[tool.name]);
    for (const [filter, { button, text, count }] of filterButtons) {
      text.textContent = label(lang, `filter_${filter}` as LabelKey);
      count.textContent = String(verdicts.filter((verdict) => verdict && matchesFilter(filter, verdict)).length);
      const active = filter === state.state_filter;
      button.classList.toggle("neta-is-active", active);
      button.setAttribute("aria-checked", String(active));
    }
    coreOnlyInput.checked = state.core_only;
    coreOnlyText.textContent = label(lang, "core_only");
    allTitleText.textContent = label(lang, "all_tools");
    for (const [operation, button] of bulkButtons) {
      button.textContent = label(lang, operation);
      button.title = label(lang, `${operation}_hint` as LabelKey);
    }

    // Cards: repaint what changed, then filter.
    const query = state.search.trim().toLowerCase();
    const terms = query ? query.split(/\s+/) : [];
    const visibleIn = new Map<string, number>();
    for (const tool of state.tools) {
      const view = cards.get(tool.name);
      if (!view) continue;
      paintCard(tool, view);
      const visible =
        matchesFilter(state.state_filter, state.states[tool.name]) &&
        (!state.core_only || tool.core) &&
        terms.every((term) => view.haystack.includes(term));
      view.node.hidden = !visible;
      visibleIn.set(tool.category, (visibleIn.get(tool.category) ?? 0) + (visible ? 1 : 0));
    }
    const categoryCounts = new Map(state.categories.map((item) => [item.name, item]));
    let anyVisible = false;
    for (const [name, view] of categories) {
      const count = categoryCounts.get(name);
      const total = count?.count ?? 0;
      view.title.textContent = categoryName(lang, name);
      view.counts.textContent = `${total === 1 ? label(lang, "tool_count_one") : label(lang, "tool_count", { n: total })} · ${label(lang, "enabled_in_category", { n: count?.enabled ?? 0 })}`;
      const shown = (visibleIn.get(name) ?? 0) > 0;
      anyVisible ||= shown;
      view.node.hidden = !shown;
      const folded = state.collapsed.includes(name);
      view.node.classList.toggle("neta-is-collapsed", folded);
      (view.body.parentElement?.parentElement as HTMLElement).classList.toggle("neta-is-closed", folded);
      view.header.setAttribute("aria-expanded", String(!folded));
      view.header.title = label(lang, folded ? "expand" : "collapse");
    }
    noMatch.hidden = anyVisible || state.tools.length === 0;
    noMatchText.textContent = label(lang, "no_match");
    clearFilters.textContent = label(lang, "clear_filters");

    previewTitle.textContent = label(lang, "preview");
    previewHint.textContent = label(lang, "preview_hint");
    loadPreview();
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
      if (patch.tools !== undefined) state.tools = Array.isArray(patch.tools) ? patch.tools : [];
      if (patch.states !== undefined) state.states = patch.states && typeof patch.states === "object" ? patch.states : {};
      if (patch.enabled_tools !== undefined) state.enabled_tools = Array.isArray(patch.enabled_tools) ? patch.enabled_tools : [];
      if (patch.categories !== undefined) state.categories = Array.isArray(patch.categories) ? patch.categories : [];
      if (patch.summary !== undefined) state.summary = patch.summary ?? {};
      if (patch.unknown !== undefined) state.unknown = Array.isArray(patch.unknown) ? patch.unknown : [];
      if (patch.warnings !== undefined) state.warnings = Array.isArray(patch.warnings) ? patch.warnings : [];
      if (patch.search !== undefined) state.search = String(patch.search ?? "");
      if (patch.state_filter !== undefined) state.state_filter = STATE_FILTERS.includes(patch.state_filter) ? patch.state_filter : "all";
      if (patch.core_only !== undefined) state.core_only = Boolean(patch.core_only);
      if (patch.collapsed !== undefined) state.collapsed = Array.isArray(patch.collapsed) ? patch.collapsed : [];
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      schedule();
    },
    setRequester(next) {
      requester = next;
    },
    destroy() {
      clearTimeout(errorTimer);
      clearTimeout(searchTimer);
      previewSeq += 1;
      for (const cleanup of cleanups) cleanup();
      for (const view of categories.values()) view.removeToggle();
      root.remove();
    },
  };
}
