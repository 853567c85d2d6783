/**
 * What `neta_nb/widgets/tool_config/panel.py` sends to the tool configuration panel and
 * what it answers to requests, mirrored field for field. Keep this file and the traits of
 * `ToolConfigPanel` in step: the kernel is the only one that decides, the view only reads.
 */
import { type Lang, normalizeLang } from "../i18n";

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

/** One model choice of "preview as", labelled by the kernel in the panel's language. */
export interface PreviewChoice {
  /** `model` (the agent's own), `all`, `without:<capability>`, `none`. */
  id: string;
  label: string;
  /** Sent as `capabilities` when picked (`null`: no capability filter). */
  capabilities: string[] | null;
}

/** The `preview_options` trait: what "preview as" offers, derived from the catalog. */
export interface PreviewOptions {
  choices: PreviewChoice[];
  /** Every scene a catalog tool mentions, plus the agent's own. */
  scenes: string[];
  /** Per scene its label; the key `""` labels "no scene". */
  scene_labels: Record<string, string>;
  agent_scene: string | null;
}

/** The `previewing_as` trait while a preview is active. */
export interface PreviewAs {
  capabilities: string[] | null;
  scene: string | null;
  /** The matching `PreviewChoice.id`, or `custom`. */
  choice: string;
  /** "Previewing as …", in the panel's language. */
  text: string;
  /** Tools whose availability the preview changes. */
  changed: string[];
}

/** A server tool whose description changed after it was granted (Python: ``MCPToolChange``). */
export interface MCPToolChange {
  name: string;
  old_description: string;
  new_description: string;
  schema_changed: boolean;
}

/** One MCP server of the catalog (Python: ``MCPServerInfo``). */
export interface MCPServerInfo {
  name: string;
  /** The category its tools are listed under. */
  category: string;
  status: "not_started" | "connecting" | "connected" | "reconnecting" | "failed" | "closed";
  /** In the panel's language, with the reason when there is one. */
  status_text: string;
  changed: MCPToolChange[];
  refused: Record<string, string>;
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
  preview_options: Partial<PreviewOptions>;
  /** `null` when the panel shows the agent's own resolution. */
  previewing_as: PreviewAs | null;
  mcp_servers: MCPServerInfo[];
  lang: Lang;
}

/** Sends `{kind, id, ...payload}` and resolves with the kernel's reply `result`. */
export type PanelRequest = (kind: string, payload?: Record<string, unknown>) => Promise<unknown>;

/** The reply to `{kind: "preview_as", capabilities, scene}` and `{kind: "reset_preview"}`. */
export interface PreviewAsReply {
  preview_as: PreviewAs | null;
  enabled_tools: string[];
}

/** The reply to `{kind: "preview"}`. */
export interface PreviewResult {
  system_prompt: string;
  tools: ToolDefinitionWire[];
}

/** The requests the panel sends and their replies (Python twins in
 * neta_nb/widgets/tool_config/traits.py). */
export interface SetToolRequest {
  name: string;
  enabled: boolean;
}

export interface SetToolReply extends ToolVerdict {
  name: string;
}

export interface BulkRequest {
  op: "restore_core_defaults" | "clear_extra_enabled" | "clear_disabled_overrides";
}

export interface BulkReply {
  enabled_tools: string[];
}

export interface ForgetRequest {
  name: string;
}

export interface ForgetReply {
  unknown: string[];
}

/** `acknowledge_change`: the description the user reviewed (refused if it changed again). */
export interface AcknowledgeRequest {
  name?: string;
  description?: string;
}

/** `preview_as`: the resolver's own arguments (null: no filter). */
export interface PreviewAsRequest {
  capabilities: string[] | null;
  scene: string | null;
}

/** One tool definition of the preview. */
export interface ToolDefinitionWire {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A request answered with nothing but success. */
export type NoReply = Record<string, never>;

/** Take the traits the kernel sent (`patch`) into `state`, each checked for its shape: a
 * trait of the wrong shape reads as empty, never breaks the panel. */
export function applyPatch(state: ToolConfigPanelState, patch: Partial<ToolConfigPanelState>): void {
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
  if (patch.preview_options !== undefined) state.preview_options = patch.preview_options && typeof patch.preview_options === "object" ? patch.preview_options : {};
  if (patch.previewing_as !== undefined) state.previewing_as = patch.previewing_as && typeof patch.previewing_as === "object" ? patch.previewing_as : null;
  if (patch.mcp_servers !== undefined) state.mcp_servers = Array.isArray(patch.mcp_servers) ? patch.mcp_servers : [];
  if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
}
