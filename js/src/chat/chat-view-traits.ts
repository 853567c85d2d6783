/**
 * The chat view's wire format: the state, the streamed operations and the snapshots that
 * `neta_nb/widgets/chat/wire.py` sends. Its TypedDicts mirror these interfaces, name for
 * name; a change here is a change there.
 *
 * A field `f` that state holds a preview of comes with `f_chars`, the whole one's length
 * (`widgets/state_bounds.py`); `full_text` fetches the whole.
 */
import type { DisplayItem } from "../rich-output";
import type { Lang } from "../i18n";
import type { RunStatus } from "../status-icon";
import type { ThinkLevel } from "../cards/thinking-level-selector";
import type { TodoItem } from "../cards/todo-card";
import type { ContextUsage, TurnUsage } from "../cards/token-stats";
import type { TraceIds } from "../cards/trace-line";
import type { FileLocation } from "../cards/file-links";
import type { AgentCommand } from "./slash-commands";

export interface ChatCard {
  kind: "tool" | "skill" | "subagent";
  id: string;
  name: string;
  label: string;
  status: RunStatus;
  args?: Record<string, unknown>;
  result: string | null;
  percent?: number;
  step?: string | null;
  detail?: string | null;
  result_chars?: number;
  /** -1: shortened, too deeply nested to measure. */
  args_chars?: number;
  step_chars?: number;
  detail_chars?: number;
  /** What a tool displayed (figures, tables); tool cards only. */
  outputs?: DisplayItem[];
  /** A `delegate` call's sub-agent (kind "subagent"). */
  subagent?: SubagentPart;
  /** Where the call is in the user's traces, when traced. */
  trace?: TraceIds;
  /** The files the call reads or changes (an outside agent's), linked from its card. */
  locations?: FileLocation[];
}

/** Python twin: `SubagentPlan` in widgets/chat/wire.py. */
export interface SubagentPlan {
  done: number;
  total: number;
}

export type SubagentStatus = "running" | "done" | "error" | "cancelled" | "interrupted";

/** A sub-agent's token counts so far (Python: `SubagentTokens`). */
export interface SubagentTokens {
  input_tokens: number;
  output_tokens: number;
  api_calls: number;
}

/**
 * What a sub-agent card adds to its `delegate` call's card (Python twin: `SubagentPart`).
 * `messages` is null in a streamed update: keep the transcript drawn (it streams as ops
 * with a `path`); otherwise the newest items (`has_older` when earlier ones were left out),
 * with `live` the response being streamed.
 */
export interface SubagentPart {
  agent: string;
  task: string;
  status: SubagentStatus;
  activity: string | null;
  plan: SubagentPlan | null;
  tokens: SubagentTokens;
  messages: ChatItem[] | null;
  has_older: boolean;
  live: LiveSnapshot | null;
}

/** A file attached to a user message, as the transcript shows it (Python: ChatAttachment). */
export interface ChatAttachment {
  name: string;
  media_type: string;
  size: number;
  width?: number;
  height?: number;
  /** Base64 of a small enough image, for a thumbnail; null otherwise. */
  thumbnail?: string | null;
  /** The stored file is gone (resume after it was deleted). */
  missing?: boolean;
}

export interface ChatItem {
  id: string;
  role: "user" | "assistant" | "compaction";
  index: number;
  pos: number;
  /** `null` in a streamed update: keep the text this view streamed. */
  text?: string | null;
  thinking?: string | null;
  cards?: ChatCard[];
  interrupted?: "cancelled" | "interrupted" | "error" | "killed" | null;
  error?: string | null;
  tokens_before?: number;
  tokens_after?: number;
  messages_folded?: number;
  text_chars?: number;
  thinking_chars?: number;
  error_chars?: number;
  attachments?: ChatAttachment[];
}

export interface Approval {
  id: string;
  name: string;
  args: Record<string, unknown>;
  args_chars?: number;
  /** A sub-agent asks: its name, and the runs it is in (as an op's `path`). */
  agent?: string;
  path?: string[];
  /** A proposed notebook edit to accept or reject (cards/cell-edit-card.ts). */
  proposal?: Record<string, unknown>;
  /** What the call will do, as its tool shows it (the code it runs, the cell). */
  preview?: ApprovalPreview;
  /** An outside MCP client's request, shown in this chat too: the client's name (the
   * decision is sent with it). */
  client?: string;
}

/** What a call waiting for approval will run (neta_nb.events.ApprovalPreview): `code`
 * (`cut` characters left out), and for a notebook cell its id and shown name (`[2]`). A
 * call that runs no code of its own says what it does in `summary` and names the cells
 * it acts on, in order, in `cells` (`cells_left_out` more not named). */
export interface ApprovalPreview {
  code: string;
  language: string;
  cell_id: string | null;
  cell_label: string | null;
  cut: number;
  summary?: string;
  cells?: PreviewCell[];
  cells_left_out?: number;
}

/** A cell an approval names (neta_nb.events.PreviewCell). */
export interface PreviewCell {
  cell_id: string;
  cell_label: string;
  first_line: string;
}

export interface AgentChoice {
  name: string;
  model: string;
}

export interface ChatViewState {
  session_id: string;
  /** Rewinds of the shown session so far (Python: `ChatView.rewinds`): when it changes the
   * history behind the items changed, and everything is drawn again. */
  rewinds: number;
  /** The session shown has a store, which keeps what a rewind, retry or edit replaces as a
   * branch (Python: `ChatView.keeps_branches`); without one the message actions ask first. */
  keeps_branches: boolean;
  /** The session shown is a fork made in this view: the id of the chat it came from, which
   * Back shows again (Python: `ChatView.fork_of`); "" otherwise. */
  fork_of: string;
  /** What the last rewind or fork that put the notebook back did, until the next message
   * (Python: `ChatView.notebook_restore`; ./notebook-restore.ts); empty otherwise. */
  notebook_restore: Record<string, unknown>;
  /** This chat also shows the requests outside MCP clients wait for (Python:
   * `ChatView.hosts_outside`): false in a client's own review view. */
  hosts_outside: boolean;
  agent: AgentChoice;
  agents: AgentChoice[];
  messages: ChatItem[];
  has_older: boolean;
  todos: TodoItem[];
  current: TurnUsage | null;
  context: ContextUsage | null;
  running: boolean;
  think_level: string;
  levels: ThinkLevel[];
  approvals: Approval[];
  /** An outside agent's `/` commands (Python: `ChatView.agent_commands`); none otherwise. */
  agent_commands: AgentCommand[];
  /** An outside agent's session modes and the one it is in; none / "" otherwise. */
  agent_modes: AgentMode[];
  agent_mode: string;
  /** Why the mode last chosen was not set; "" otherwise. */
  mode_error: string;
  notice: string;
  /** How the notice is drawn: an error, or a warning (a budget mostly spent). */
  notice_tone: "error" | "warning";
  /** Why what is shown is not saved yet (the store is behind, retrying); "" when saved. */
  store_warning: string;
  height: string;
  lang: Lang;
  /** A stored session of another kernel shown read-only; null (or `{}` from the trait)
   * for a live chat. */
  read_only: ReadOnlyState | null;
  /** Python: ChatView.attachment_limits (neta_nb.attachments.AttachmentLimits). */
  attachment_limits: AttachmentLimitsState | null;
}

/** A session mode an outside agent offers (Python twin: `AgentMode`,
 * runtime/acp/controls.py). */
export interface AgentMode {
  id: string;
  name: string;
  description: string;
}

export interface AttachmentLimitsState {
  max_file_bytes: number;
  max_total_bytes: number;
  max_count: number;
}

/** Python: the `read_only` trait of ChatView. */
export interface ReadOnlyState {
  /** Who runs its turn ("process 4242 on host"); "" once nobody does. */
  owner: string;
  /** The owner's turn is still running: it cannot be continued here yet. */
  busy: boolean;
  /** The session is this row's of a batch run (its stored answer): never continued here. */
  batch_row?: number;
}

/** `full_text` (Python twin: `FullTextRequest` in widgets/chat/wire.py). */
export interface FullTextRequest {
  message_id: string;
  card_id?: string;
  field: "text" | "thinking" | "error" | "result" | "args" | "step" | "detail";
  /** A message of a sub-agent's transcript: the runs it is nested in. */
  path?: string[];
}

/** `path` (absent at the top) names the sub-agent transcript an op applies to: the ids of
 * the `delegate` calls from the top. */
/** A response starts streaming (Python twin: `LiveOp`). `path` on every op: the sub-agent
 * runs it is nested in (none: the chat's own). */
export interface LiveOp {
  op: "live";
  id: string;
  path?: string[];
}

/** Streamed text or thinking (Python twin: `StreamOp`). */
export interface StreamOp {
  op: "text" | "thinking";
  text: string;
  path?: string[];
}

export interface ThinkingDoneOp {
  op: "thinking_done";
  path?: string[];
}

/** The live response became the message `id` (null: it ended without one). */
export interface EndOp {
  op: "end";
  id: string | null;
  path?: string[];
}

export interface ItemOp {
  op: "item";
  item: ChatItem;
  path?: string[];
}

export type ChatOp = LiveOp | StreamOp | ThinkingDoneOp | EndOp | ItemOp;

export interface LiveSnapshot {
  id: string;
  thinking: string;
  text: string;
  thinking_open: boolean;
}

export interface ChatSnapshot
  extends Pick<ChatViewState, "session_id" | "messages" | "has_older" | "todos" | "current" | "context" | "running" | "think_level" | "approvals" | "notice" | "notice_tone"> {
  seq: number;
  live: LiveSnapshot | null;
}

export interface OlderPage {
  session_id: string;
  messages: ChatItem[];
  has_older: boolean;
}
