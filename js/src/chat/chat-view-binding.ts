/**
 * Binds the chat view and the session list to their anywidget models.
 *
 * The chat view's stream arrives as numbered batches (`{kind: "batch", seq, ops}`), followed
 * by `followNumberedBatches` (a gap or a view opened mid-turn asks the kernel for `sync`).
 * Between turns the traits are the whole state, and `_seq` is the batch they include.
 *
 * Actions are `{kind, id}` requests (`request()`: they always settle, with a timeout); a
 * failure reaches the view as an `Error` whose message is ready to show in its language.
 * The request and reply shapes have Python twins (TypedDicts of the same names) in
 * neta_nb/widgets/chat/wire.py and panels/session_sidebar.py.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";
import { fetchWholeText, readTraits, request, requestShowingErrors, writeBack, type Cleanup, type RendererProps } from "../anywidget-binding";
import { element } from "../dom";
import type { DrawerName } from "./chat-header";
import type { SetModeReply, SetModeRequest } from "./agent-controls";
import { createChatView, type ChatActions, type ChatOp, type ChatSnapshot, type ChatViewState, type OlderPage } from "./chat-view";
import { drawWidget } from "./drawn-widget";
import { relayErrorActions } from "./error-actions";
import { followNumberedBatches } from "../numbered-batches";
import { receivedBatches } from "../received-batches";
import { notebookBridgePresent, relayNotebookRequests } from "./notebook-bridge";
import { createSessionSidebar, type DeleteRequest, type OpenRequest, type RenameRequest, type SessionReply, type SessionSidebarState } from "./session-sidebar";

type Model = AnyModel<Record<string, unknown>>;

/** Megabytes of files to a kernel on a busy machine take longer than a click's reply. */
const ATTACHMENT_SEND_TIMEOUT_MS = 60_000;

/** `older`: the page before message index `before`. */
export interface OlderRequest {
  before: number;
}

/** `command`: one UI→server command of the event protocol (send, stop, set_thinking_level,
 * approve). */
export interface CommandRequest {
  command: { type: string } & Record<string, unknown>;
}

export interface CommandReply {
  running: boolean;
  think_level?: string;
}

/** `view_opened` / `view_closed`: this view appears or goes (the kernel lets a session's
 * approvals wait for a click only while a view is on screen). `view_opened` also says
 * whether the page can reach the notebook holding the view: the JupyterLab / Notebook 7
 * extension is active (./notebook-bridge.ts). */
export interface ViewRequest {
  view_id: string;
  notebook_bridge?: boolean;
}

export interface SwitchAgentRequest {
  name: string;
}

/** `open_panel`: the widget the header's drawer shows — the list of chats or the agent's
 * tool panel — made (once) by the kernel for this chat. */
export interface OpenPanelRequest {
  panel: DrawerName;
}

export interface OpenPanelReply {
  model_id: string;
  /** With `model_id` empty: the text the drawer shows in its place (a chat kept in memory
   * has no list of chats — a normal state, said as one). */
  empty?: string;
}

/** `side_panel`: the chat's own widget model, which the side panel shows (./side-panel.ts). */
export interface SidePanelModel {
  model_id: string;
}

interface WindowOp {
  op: "window";
  ids: string[];
  has_older: boolean;
}

interface BatchMessage {
  kind: "batch";
  seq: number;
  ops: (ChatOp | WindowOp)[];
}

const CHAT_TRAITS: readonly (keyof ChatViewState & string)[] = [
  "lang",
  "session_id",
  "rewinds",
  "keeps_branches",
  "fork_of",
  "notebook_restore",
  "hosts_outside",
  "agent",
  "agents",
  "height",
  "has_older",
  "messages",
  "todos",
  "current",
  "context",
  "running",
  "levels",
  "think_level",
  "approvals",
  "agent_commands",
  "agent_modes",
  "agent_mode",
  "mode_error",
  "notice",
  "notice_tone",
  "read_only",
  "store_warning",
  "attachment_limits",
];

/**
 * `kernel: false` (saved widget state only, see loader.ts): the view shows the conversation
 * as it was saved and asks the kernel for nothing. "Show all" under a cut text stays: it
 * says at once that the kernel holding the whole is gone (`fetchWholeText`).
 */
export function renderChatView({ model: anyModel, el, kernel = true }: RendererProps): Cleanup {
  const model = anyModel as Model;
  const command = (body: CommandRequest["command"]) =>
    requestShowingErrors<CommandReply>(model, "command", { command: body } satisfies CommandRequest);
  // Files travel as the message's binary buffers, in the order of `attachments`.
  // The context chip's cells, if any, go as `cells` (read from the page when sent).
  const sendWithFiles = async (text: string, files: File[], cells: string[] = []) => {
    const context = cells.length ? { cells } : {};
    if (files.length === 0) return command({ type: "send", text, ...context });
    const buffers = await Promise.all(files.map((file) => file.arrayBuffer()));
    const attachments = files.map((file) => ({ name: file.name, media_type: file.type, size: file.size }));
    return requestShowingErrors<CommandReply>(
      model,
      "command",
      { command: { type: "send", text, attachments, ...context } } satisfies CommandRequest,
      { buffers, timeout: ATTACHMENT_SEND_TIMEOUT_MS },
    );
  };
  const actions: Partial<ChatActions> = {
      send: (text, files, cells) => sendWithFiles(text, files, cells),
      stop: () => command({ type: "stop" }),
      setLevel: (level) => command({ type: "set_thinking_level", level }),
      approve: (id, decision, path, text, client) =>
        command({ type: "approve", id, decision, subagent: path, ...(text === undefined ? {} : { text }), ...(client === undefined ? {} : { client }) }),
      stopSubagent: (runId) => command({ type: "stop", subagent: runId }),
      loadOlder: (before) => requestShowingErrors<OlderPage>(model, "older", { before } satisfies OlderRequest),
      switchAgent: (name) => requestShowingErrors<SessionReply>(model, "switch_agent", { name } satisfies SwitchAgentRequest),
      setMode: (mode) => requestShowingErrors<SetModeReply>(model, "set_mode", { mode } satisfies SetModeRequest),
      fetchWhole: (wanted) => fetchWholeText(model, el, { ...wanted }),
      refresh: () => requestShowingErrors(model, "refresh"),
      takeOver: () => requestShowingErrors<SessionReply>(model, "take_over"),
      backFromFork: () => requestShowingErrors<SessionReply>(model, "back_from_fork"),
      messageAction: (request) => requestShowingErrors<SessionReply>(model, "message_action", { ...request }),
      openDrawer: async (name, host, signal) => {
        const reply = await requestShowingErrors<OpenPanelReply>(model, "open_panel", { panel: name } satisfies OpenPanelRequest, { signal });
        if (!reply.model_id) {
          const empty = element("div", "neta-chat-drawer-empty", reply.empty ?? "");
          host.append(empty);
          return () => empty.remove();
        }
        return drawWidget(model, reply.model_id, host, signal);
      },
      sidePanelModel: async () => (await requestShowingErrors<SidePanelModel>(model, "side_panel")).model_id,
  };
  const view = createChatView(el, {
    lang: model.get("lang") as ChatViewState["lang"],
    kernel,
    actions: kernel ? actions : { fetchWhole: actions.fetchWhole },
  });
  view.update(readTraits<ChatViewState>(model, CHAT_TRAITS));

  const stream = followNumberedBatches<BatchMessage, ChatSnapshot>(model, {
    kind: "batch",
    snapshot: "sync",
    applySnapshot: (snapshot) => view.applySnapshot(snapshot),
    applyBatch: (batch) => {
      const ops: ChatOp[] = [];
      let window: WindowOp | null = null;
      for (const op of batch.ops) {
        if (op.op === "window") window = op;
        else ops.push(op);
      }
      if (!view.applyOps(ops)) {
        stream.resync(); // a sub-agent card it never drew: take the kernel's state
        return;
      }
      if (window) {
        // The turn ended: the kernel names the window instead of sending its text again.
        // Set locally (never saved back): what this frontend renders and what a saved
        // notebook keeps. The change events update the view like a kernel sync would.
        const items = view.items(window.ids);
        if (items === null) {
          stream.resync();
          return;
        }
        model.set("messages", items);
        model.set("has_older", window.has_older);
      }
    },
  });

  const listeners = CHAT_TRAITS.map((trait) => {
    const listener = () => {
      if (trait === "session_id" || trait === "read_only" || trait === "rewinds") {
        // A new session, the same one entering or leaving read-only, or rewound:
        // everything is replaced. Backbone sets every attribute of an update before it
        // fires change events, so the other traits are current here.
        view.update({ session_id: model.get("session_id") as string, rewinds: Number(model.get("rewinds") ?? 0) });
        view.update(readTraits<ChatViewState>(model, CHAT_TRAITS));
        const seq = Number(model.get("_seq") ?? 0);
        // A session shown mid-turn (-1): its live response is in no trait; fetch it now
        // rather than at the next batch (which waits while the turn waits on a tool).
        if (seq < 0 && model.get("running") && kernel) stream.resync();
        else stream.continueFrom(seq);
        return;
      }
      view.update({ [trait]: model.get(trait) } as Partial<ChatViewState>);
    };
    model.on(`change:${trait}`, listener);
    return [trait, listener] as const;
  });
  const onSeq = () => {
    // Between turns the traits are the whole state as of batch `_seq`.
    if (!model.get("running")) stream.continueFrom(Number(model.get("_seq") ?? 0));
  };
  model.on("change:_seq", onSeq);

  const seq = Number(model.get("_seq") ?? 0);
  if (model.get("running") && kernel) {
    // Drawn mid-turn (Run All draws the chat after the turn started): the model received
    // the turn's batches already; a snapshot only if they do not join up with the traits.
    // Nothing received mid-turn means the model missed the turn's start batch (or the
    // view came within its first 0.1 s): a snapshot, small then, is the safe way.
    const received = receivedBatches<BatchMessage>(model.get("_key"), "batch");
    const fresh = received?.some((batch) => batch.seq > seq) ?? false;
    if (!fresh || !stream.replay(seq, received ?? [])) stream.resync();
  } else stream.continueFrom(seq);

  // Announce this view; failures only mean the kernel is gone, when nothing is pending.
  const viewId = `view-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  // The kernel's notebook tools reach the notebook through the view it names.
  const stopRelay = kernel ? relayNotebookRequests(model, { viewId, root: el }) : () => undefined;
  // The page's Fix / Explain on a cell's error go to the chat through a view of it.
  const stopErrorActions = kernel ? relayErrorActions(model, el) : () => undefined;
  if (kernel) {
    const opened = { view_id: viewId, notebook_bridge: notebookBridgePresent() } satisfies ViewRequest;
    request(model, "view_opened", opened).catch(() => undefined);
  }

  return () => {
    stopRelay();
    stopErrorActions();
    if (kernel) request(model, "view_closed", { view_id: viewId } satisfies ViewRequest).catch(() => undefined);
    stream.dispose();
    model.off("change:_seq", onSeq);
    for (const [trait, listener] of listeners) model.off(`change:${trait}`, listener);
    view.destroy();
  };
}

const SIDEBAR_TRAITS: readonly (keyof SessionSidebarState & string)[] = ["sessions", "active", "can_open", "height", "lang", "query", "deleted"];

export function renderSessionSidebar({ model: anyModel, el }: Pick<RenderProps, "model" | "el">): Cleanup {
  const model = anyModel as Model;
  const sidebar = createSessionSidebar(el, {
    lang: model.get("lang") as SessionSidebarState["lang"],
    actions: {
      open: (sessionId) => requestShowingErrors<SessionReply>(model, "open", { session_id: sessionId } satisfies OpenRequest),
      newChat: () => requestShowingErrors<SessionReply>(model, "new_chat"),
      rename: (sessionId, title) =>
        requestShowingErrors<SessionReply>(model, "rename", { session_id: sessionId, title } satisfies RenameRequest),
      delete: (sessionId) => requestShowingErrors<SessionReply>(model, "delete", { session_id: sessionId } satisfies DeleteRequest),
      undoDelete: () => requestShowingErrors<SessionReply>(model, "undo_delete"),
    },
    onUserChange: writeBack<SessionSidebarState>(model),
  });
  sidebar.update(readTraits<SessionSidebarState>(model, SIDEBAR_TRAITS));
  const listeners = SIDEBAR_TRAITS.map((trait) => {
    const listener = () => sidebar.update({ [trait]: model.get(trait) } as Partial<SessionSidebarState>);
    model.on(`change:${trait}`, listener);
    return [trait, listener] as const;
  });
  return () => {
    for (const [trait, listener] of listeners) model.off(`change:${trait}`, listener);
    sidebar.destroy();
  };
}
