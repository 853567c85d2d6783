/**
 * What `neta_nb/widgets/tool_config_panel.py` sends to the tool configuration panel and
 * what it answers to requests, mirrored field for field. Keep this file and the traits of
 * `ToolConfigPanel` in step: the kernel is the only one that decides, the view only reads.
 */
import type { Lang } from "./i18n";

export type ToolStateName = "default_enabled" | "agent_enabled" | "agent_disabled" | "globally_disabled" | "available";
export type StateFilter = "all" | "enabled" | "off" | "globally_disabled";
export type BulkOperation = "restore_core_defaults" | "clear_extra_enabled" | "clear_disabled_overrides";

export const STATE_FILTERS: readonly StateFilter[] = ["all", "enabled", "off", "globally_disabled"];
export const BULK_OPERATIONS: readonly BulkOperation[] = ["restore_core_defaults", "clear_extra_enabled", "clear_disabled_overrides"];
export const TOOL_STATES: readonly ToolStateName[] = ["default_enabled", "agent_enabled", "agent_disabled", "globally_disabled", "available"];

/** One entry of the `tools` trait: what does not depend on the agent. */
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

/** One value of the `states` trait: the resolver's verdict on a tool for this agent. */
export interface ToolVerdict {
  state: ToolStateName;
  /** The agent's switch: on by default or switched on. */
  on: boolean;
  /** In the final set (after the capability / scene filter). */
  available: boolean;
  /** Why the tool is not in the final set, already in the panel's language (the kernel
   * renders it from the resolver's notice and the shared label table). */
  reason: string | null;
  /** The resolver's notice as data: `needs_capability`, `scene`, `globally_disabled`, … */
  reason_code: string | null;
  reason_params: Record<string, unknown> | null;
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
  /** Config notes, already in the panel's language. */
  warnings: string[];
  search: string;
  state_filter: StateFilter;
  core_only: boolean;
  collapsed: string[];
  lang: Lang;
}

/** Sends `{kind, id, ...payload}` and resolves with the kernel's reply `result`. */
export type PanelRequest = (kind: string, payload?: Record<string, unknown>) => Promise<unknown>;

/** The reply to `{kind: "preview"}`. */
export interface PreviewResult {
  system_prompt: string;
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
}
