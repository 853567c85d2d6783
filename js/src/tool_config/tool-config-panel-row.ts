/**
 * One tool's row in the tool configuration panel (seed 001 §7.2): name, description, tags,
 * state in words, the reason when it adds something, and the single switch meaning
 * "available to this agent". Not to be confused with the tool-call card (`tool-card.ts`),
 * which shows one call of a tool in a conversation.
 *
 * A row is built once per tool and repainted only when what it shows changed; the panel
 * owns the state and decides when to repaint.
 */
import "./tool-config-panel-row.css";
import { element } from "../dom";
import { hasLabel, t, type Lang } from "../i18n";
import { TOOL_STATES, type StateFilter, type ToolInfo, type ToolVerdict } from "./tool-config-panel-traits";

export function categoryName(lang: Lang, category: string): string {
  const key = `category_${category}`;
  if (hasLabel(key)) return t(lang, key);
  // A custom category is shown as registered, capitalised like the seed's in English.
  return lang === "en" ? category.charAt(0).toUpperCase() + category.slice(1) : category;
}

/**
 * Whether a tool's row shows under a state filter. "Enabled" means what the summary and
 * the enabled section count: in the resolver's final set (`final`), not merely switched on
 * (a switched-on tool the model cannot use is listed apart, as unavailable).
 */
export function matchesFilter(filter: StateFilter, verdict: ToolVerdict | undefined, final: boolean): boolean {
  if (!verdict || filter === "all") return true;
  if (filter === "enabled") return final;
  if (filter === "globally_disabled") return verdict.state === "globally_disabled";
  return !verdict.on && verdict.state !== "globally_disabled";
}

function tag(text: string, kind: string, title?: string): HTMLElement {
  const node = element("span", `neta-tag neta-tc-tag neta-tc-tag-${kind}`, text);
  if (title) node.title = title;
  return node;
}

export interface PanelToolRowOptions {
  /** The user flipped the switch; settles when the kernel has answered. */
  onSwitch(row: PanelToolRow, wanted: boolean): Promise<unknown>;
  /** Paint the row from the panel's current state (the panel knows the latest verdict). */
  repaint(row: PanelToolRow): void;
}

export class PanelToolRow {
  readonly node: HTMLElement;
  /** Lower-cased searchable text: name, label, description, category. */
  haystack = "";
  /** A switch was clicked and the kernel has not answered yet. */
  private pending = false;
  /** What the row currently shows, so an unchanged row is not touched. */
  private rendered = "";
  private readonly title: HTMLElement;
  private readonly name: HTMLElement;
  private readonly tags: HTMLElement;
  private readonly description: HTMLElement;
  private readonly stateText: HTMLElement;
  private readonly reason: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly switchLabel: HTMLElement;
  private readonly onChange: () => void;

  constructor(
    readonly toolName: string,
    options: PanelToolRowOptions,
  ) {
    this.node = element("div", "neta-tc-tool");
    this.node.dataset.name = toolName;
    const main = element("div", "neta-tc-tool-main");
    const head = element("div", "neta-tc-tool-head");
    this.title = element("span", "neta-tc-tool-label");
    this.name = element("code", "neta-tc-tool-name");
    this.tags = element("span", "neta-tc-tags");
    head.append(this.title, this.name, this.tags);
    this.description = element("div", "neta-tc-tool-desc");
    const status = element("div", "neta-tc-tool-state");
    const dot = element("span", "neta-tc-dot");
    dot.setAttribute("aria-hidden", "true");
    this.stateText = element("span", "neta-tc-state-text");
    this.reason = element("span", "neta-tc-reason");
    status.append(dot, this.stateText, this.reason);
    main.append(head, this.description, status);

    this.switchLabel = element("label", "neta-switch");
    this.input = element("input", "neta-switch-input");
    this.input.type = "checkbox";
    this.input.setAttribute("role", "switch");
    const track = element("span", "neta-switch-track");
    track.setAttribute("aria-hidden", "true");
    this.switchLabel.append(this.input, track);
    this.node.append(main, this.switchLabel);

    this.onChange = () => {
      const wanted = this.input.checked;
      this.pending = true;
      this.invalidate();
      options.repaint(this);
      void options.onSwitch(this, wanted).finally(() => {
        this.pending = false;
        this.invalidate();
        // Whatever the kernel decided is in `states` by now (its state update is sent
        // before the reply); show that, not what was clicked.
        options.repaint(this);
      });
    };
    this.input.addEventListener("change", this.onChange);
  }

  /** Forget what was painted, so the next `paint` redraws (e.g. after a catalog change). */
  invalidate(): void {
    this.rendered = "";
  }

  /** `changed`: a "preview as" changes whether this tool is available. */
  paint(tool: ToolInfo, verdict: ToolVerdict | undefined, lang: Lang, changed = false): void {
    const signature = JSON.stringify([lang, verdict, this.pending, tool, changed]);
    if (signature === this.rendered) return;
    this.rendered = signature;
    const global = verdict?.state === "globally_disabled";
    const on = verdict?.on ?? false;
    const unavailable = on && verdict !== undefined && !verdict.available;
    const classes = this.node.classList;
    for (const name of TOOL_STATES) classes.toggle(`neta-tc-tool-${name}`, verdict?.state === name);
    classes.toggle("neta-tc-tool-on", on);
    classes.toggle("neta-tc-tool-unavailable", unavailable);
    classes.toggle("neta-is-pending", this.pending);
    classes.toggle("neta-tc-tool-previewed", changed);

    this.title.textContent = tool.label || tool.name;
    this.name.textContent = tool.name;
    this.name.hidden = !tool.label || tool.label === tool.name;
    const tags: HTMLElement[] = [];
    if (tool.core) tags.push(tag(t(lang, "panel_core"), "core"));
    tags.push(tag(categoryName(lang, tool.category), "category"));
    for (const capability of tool.capabilities) tags.push(tag(t(lang, "panel_needs", { what: capability }), "capability"));
    if (tool.scenes) tags.push(tag(t(lang, "panel_scene", { what: tool.scenes.join(", ") }), "scene"));
    if (tool.requires_approval) tags.push(tag(t(lang, "panel_approval"), "approval"));
    if (changed) tags.push(tag(t(lang, "panel_preview_changed"), "previewed"));
    this.tags.replaceChildren(...tags);
    // Descriptions are tool text: textContent only, never markup.
    this.description.textContent = tool.description;
    this.description.title = tool.description;
    this.description.hidden = !tool.description;

    const reason = verdict?.reason ?? "";
    // A global disable is explained by the resolver's own sentence; the other states by
    // their words (seed §4.2), plus the reason when it adds something: a capability or
    // scene filter, or a core tool the agent does not inherit.
    this.stateText.textContent = !verdict ? "" : global && reason ? reason : t(lang, `state_${verdict.state}`);
    const showReason = Boolean(reason) && (unavailable || (verdict?.state === "available" && tool.core));
    this.reason.textContent = showReason ? reason : "";
    this.reason.hidden = !showReason;

    this.input.checked = this.pending ? this.input.checked : on;
    this.input.disabled = global || this.pending || !verdict;
    this.input.setAttribute("aria-label", `${t(lang, "panel_switch_label")}: ${tool.label || tool.name}`);
    this.switchLabel.title = global ? t(lang, "panel_read_only") : t(lang, on ? "panel_switch_off" : "panel_switch_on");
    this.haystack = [tool.name, tool.label, tool.description, tool.category, categoryName(lang, tool.category)].join("\n").toLowerCase();
  }

  destroy(): void {
    this.input.removeEventListener("change", this.onChange);
    this.node.remove();
  }
}
