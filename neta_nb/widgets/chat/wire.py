"""The chat view's wire format: what the kernel sends its views (items, batches of
operations, snapshots) and the requests and replies between them. Each TypedDict mirrors
the TS interface of the same name (``js/src/chat/chat-view-traits.ts``, checked field for field
by ``tests/widgets/test_wire_types.py``); a field changed on one side changes on the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, Required, TypedDict

from ...messages import RunStatus
from ...runtime.mentions.mention_candidates import MentionCandidate
from ..wire import ContextUsageDict, DisplayItemDict, NoReply, TodoItemDict, TurnUsageDict

__all__ = [
    "AgentChoice",
    "Approval",
    "ApprovalPreviewDict",
    "BatchMessage",
    "ChatAttachment",
    "ChatCard",
    "ChatItem",
    "ChatOp",
    "ChatSnapshot",
    "CommandReply",
    "CommandRequest",
    "DeleteRequest",
    "DeletedSession",
    "EndOp",
    "FileLocationDict",
    "FullText",
    "FullTextField",
    "FullTextRequest",
    "ItemOp",
    "LiveOp",
    "LiveSnapshot",
    "MentionCandidatesReply",
    "MentionCandidatesRequest",
    "MentionPreviewRequest",
    "MessageActionReply",
    "MessageActionRequest",
    "NoReply",
    "NotebookBridgeError",
    "NotebookReply",
    "OlderPage",
    "OlderRequest",
    "OpenPanelReply",
    "OpenPanelRequest",
    "OpenRequest",
    "PreviewCellDict",
    "RenameRequest",
    "SessionReply",
    "SessionRow",
    "SidePanelModel",
    "StreamOp",
    "SubagentPart",
    "SubagentPlan",
    "SubagentTokens",
    "SwitchAgentReply",
    "SwitchAgentRequest",
    "ThinkingDoneOp",
    "TodoBadge",
    "TraceIds",
    "ViewRequest",
    "WindowOp",
]


class ChatCard(TypedDict):
    """A tool, skill or sub-agent card inside an assistant message (TS: ``ChatCard``,
    chat-view-traits.ts). Tool cards carry ``args``, skill cards ``percent``/``step``/
    ``detail``, sub-agent cards ``subagent``. A ``*_chars`` field says its field is a
    preview of a text that long (see ``neta_nb.widgets.state_bounds``)."""

    kind: Literal["tool", "skill", "subagent"]
    id: str
    name: str
    label: str
    status: RunStatus
    result: str | None
    args: NotRequired[dict[str, Any]]
    percent: NotRequired[float]
    step: NotRequired[str | None]
    detail: NotRequired[str | None]
    result_chars: NotRequired[int]
    args_chars: NotRequired[int]
    step_chars: NotRequired[int]
    detail_chars: NotRequired[int]
    outputs: NotRequired[list[DisplayItemDict]]
    """What the tool displayed (:class:`~neta_nb.messages.DisplayItem` dumps)."""
    subagent: NotRequired[SubagentPart]
    trace: NotRequired[TraceIds]
    """Where the call is in the user's traces, when traced (``runtime.tracing``)."""
    locations: NotRequired[list[FileLocationDict]]
    """The files the call reads or changes (an outside agent's), linked from its card."""


class FileLocationDict(TypedDict):
    """A :class:`~neta_nb.messages.FileLocation`'s dump (TS: ``FileLocation``,
    cards/file-links.ts): a file's absolute path, and its line when one was named."""

    path: str
    line: NotRequired[int | None]
    notebook: NotRequired[str]
    """The absolute path of the kernel's notebook (``drawing.render.linked_locations``):
    how the page places the file under the folder it serves."""


class TraceIds(TypedDict):
    """A traced call's OpenTelemetry ids in hex (TS: ``TraceIds``, cards/trace-line.ts)."""

    trace_id: str
    span_id: str


class SubagentPlan(TypedDict):
    """A sub-agent's plan progress: ``done`` of ``total`` steps (TS: ``SubagentPlan``)."""

    done: int
    total: int


class SubagentTokens(TypedDict):
    """A sub-agent's token counts so far (TS: ``SubagentTokens``, chat-view-traits.ts)."""

    input_tokens: int
    output_tokens: int
    api_calls: int


class SubagentPart(TypedDict):
    """What a sub-agent card adds to its ``delegate`` call's card (TS: ``SubagentPart``,
    chat-view-traits.ts): the child's name and task, how its run stands, what it is doing
    now, and its transcript — ``messages`` is ``None`` in a streamed update ("keep yours":
    the transcript streams as operations with a ``path``), the newest items that fit
    otherwise (``has_older`` when earlier ones were left out), with ``live`` the response
    it is streaming."""

    agent: str
    task: str
    status: Literal["running", "done", "error", "cancelled", "interrupted"]
    activity: str | None
    plan: SubagentPlan | None
    tokens: SubagentTokens
    messages: list[ChatItem] | None
    has_older: bool
    live: LiveSnapshot | None


class ChatAttachment(TypedDict):
    """A file of a user message as the transcript shows it (TS: ``ChatAttachment``,
    chat-view-traits.ts). ``thumbnail``: the image's base64 when small enough."""

    name: str
    media_type: str
    size: int
    width: NotRequired[int]
    height: NotRequired[int]
    thumbnail: NotRequired[str | None]
    missing: NotRequired[bool]


class ChatItem(TypedDict, total=False):
    """One drawn message or compaction marker (TS: ``ChatItem``, chat-view-traits.ts). ``text`` and
    ``thinking`` are ``None`` in a streamed update: "keep what you streamed"."""

    id: Required[str]
    role: Required[Literal["user", "assistant", "compaction"]]
    index: Required[int]
    pos: Required[int]
    text: str | None
    thinking: str | None
    cards: list[ChatCard]
    interrupted: Literal["cancelled", "interrupted", "error", "killed"] | None
    error: str | None
    tokens_before: int
    tokens_after: int
    messages_folded: int
    text_chars: int
    """``text`` is a preview of a text this long (see ``neta_nb.widgets.state_bounds``); so for the
    rest."""
    thinking_chars: int
    error_chars: int
    attachments: list[ChatAttachment]


class Approval(TypedDict):
    """A pending approval request (TS: ``Approval``, chat-view-traits.ts); a sub-agent's
    names the child (``agent``) and the run it is in (``path``, as for nested ops); a
    proposed notebook edit carries its ``proposal`` (cards/cell-edit-card.ts)."""

    id: str
    name: str
    args: dict[str, Any]
    args_chars: NotRequired[int]
    agent: NotRequired[str]
    path: NotRequired[list[str]]
    proposal: NotRequired[dict[str, Any]]
    preview: NotRequired[ApprovalPreviewDict]
    """What the call will do, as its tool shows it (``neta_nb.events.ApprovalPreview``)."""
    client: NotRequired[str]
    """An outside MCP client's request, shown in this chat too: the client's name
    (``neta_nb.widgets.outside_reviews``); the decision is sent with it."""


class ApprovalPreviewDict(TypedDict):
    """An :class:`~neta_nb.events.ApprovalPreview`'s dump (TS: ``ApprovalPreview``,
    chat-view-traits.ts): the code a call waiting for approval will run, and its cell."""

    code: str
    language: str
    cell_id: str | None
    cell_label: str | None
    cut: int
    summary: NotRequired[str]
    cells: NotRequired[list[PreviewCellDict]]
    cells_left_out: NotRequired[int]


class PreviewCellDict(TypedDict):
    """A :class:`~neta_nb.events.PreviewCell`'s dump (TS: ``PreviewCell``,
    chat-view-traits.ts): a cell an approval names."""

    cell_id: str
    cell_label: str
    first_line: str


class AgentChoice(TypedDict):
    """An agent the selector offers (TS: ``AgentChoice``, chat-view-traits.ts)."""

    name: str
    model: str


class LiveSnapshot(TypedDict):
    """The response being streamed, whole (TS: ``LiveSnapshot``, chat-view-traits.ts)."""

    id: str
    thinking: str
    text: str
    thinking_open: bool


class ChatSnapshot(TypedDict):
    """The ``sync`` reply: everything a view needs to draw the present, as of batch ``seq``
    (TS: ``ChatSnapshot``, chat-view-traits.ts)."""

    seq: int
    session_id: str
    messages: list[ChatItem]
    has_older: bool
    live: LiveSnapshot | None
    running: bool
    todos: list[TodoItemDict]
    current: TurnUsageDict
    """``{}`` before a session is bound (the trait's default), where TS reads ``null``."""
    context: ContextUsageDict
    """``{}`` before a session is bound and in a read-only chat, where TS reads ``null``."""
    approvals: list[Approval]
    think_level: str
    notice: str
    notice_tone: Literal["error", "warning"]


class ViewRequest(TypedDict, total=False):
    """``view_opened`` / ``view_closed``: a rendered view of the widget appears or goes
    (TS: ``ViewRequest``, chat-view-binding.ts); ``notebook_bridge``: the page has the
    extension that reaches the notebook holding the view."""

    view_id: Required[str]
    notebook_bridge: bool


class NotebookReply(TypedDict, total=False):
    """``notebook_reply``: a view's answer to a ``notebook_request`` the kernel sent it
    (TS: notebook-bridge.ts; see ``neta_nb.widgets.chat.notebook_page``)."""

    request_id: Required[str]
    ok: Required[bool]
    result: Any
    error: NotebookBridgeError


class NotebookBridgeError(TypedDict):
    """Why a notebook request failed (TS: ``NotebookBridgeError``, notebook-bridge.ts)."""

    code: str
    message: str


FullTextField = Literal["text", "thinking", "error", "result", "args", "step", "detail"]
"""The fields ``full_text`` gives whole: a message's ``text``, ``thinking`` or ``error``, a
card's ``result``, ``args``, ``step`` or ``detail``."""


class FullTextRequest(TypedDict):
    """``full_text``: the whole of a field the state holds a preview of — ``text``,
    ``thinking`` or ``error`` of message ``message_id``, or with ``card_id`` the ``result``,
    ``args``, ``step`` or ``detail`` of that card (TS: ``FullTextRequest``,
    chat-view-traits.ts)."""

    message_id: str
    card_id: NotRequired[str]
    field: FullTextField
    path: NotRequired[list[str]]
    """Set for a message of a sub-agent's transcript: the runs it is nested in."""


class FullText(TypedDict):
    """The ``full_text`` reply (TS: ``FullText``, chat-view-traits.ts); arguments come as
    indented JSON."""

    text: str

class OlderRequest(TypedDict):
    """``older``: the page before message index ``before`` (TS: ``OlderRequest``,
    chat-view-binding.ts)."""

    before: int


class OlderPage(TypedDict):
    """The ``older`` reply (TS: ``OlderPage``, chat-view-traits.ts)."""

    session_id: str
    messages: list[ChatItem]
    has_older: bool


class CommandRequest(TypedDict):
    """``command``: one UI→server command of the event protocol (``send``, ``stop``,
    ``set_thinking_level``, ``approve``) (TS: ``CommandRequest``, chat-view-binding.ts)."""

    command: Mapping[str, Any]


class CommandReply(TypedDict, total=False):
    """The ``command`` reply (TS: ``CommandReply``, chat-view-binding.ts)."""

    running: Required[bool]
    think_level: str


class SwitchAgentRequest(TypedDict):
    """``switch_agent`` (TS: ``SwitchAgentRequest``, chat-view-binding.ts)."""

    name: str


class MessageActionRequest(TypedDict):
    """``message_action``: retry, edit, rewind or fork at a message (TS:
    ``MessageActionRequest``, message-actions.ts)."""

    action: Literal["retry", "edit", "rewind", "fork"]
    message_id: str
    text: NotRequired[str]
    """``edit``: the new text of the prompt."""
    notebook: NotRequired[bool]
    """``rewind``, ``fork``: put back the notebook's cells the agent changed after it too."""


class SwitchAgentReply(TypedDict):
    """The session now shown (TS: ``SessionReply``, session-sidebar.ts; the sidebar's
    replies have the same shape)."""

    session_id: str


class MessageActionReply(TypedDict):
    """``message_action``'s reply: the session shown and, for a rewind or fork that put
    the notebook back, what it did (TS: ``MessageActionReply``, message-actions.ts)."""

    session_id: str
    notebook: NotRequired[dict[str, Any]]
    """``NotebookRestore.to_json()``: the cells put back, those left (conflicts), error."""


# The members of the TS ``ChatOp`` union (chat-view-traits.ts), which are unnamed there, and the
# binding's ``WindowOp`` (chat-view-binding.ts). ``path`` (absent at the top) names the
# sub-agent transcript an operation applies to: the ids of the ``delegate`` calls from the
# top, so a grandchild's has two.
class LiveOp(TypedDict):
    op: Literal["live"]
    id: str
    path: NotRequired[list[str]]


class StreamOp(TypedDict):
    op: Literal["text", "thinking"]
    text: str
    path: NotRequired[list[str]]


class ThinkingDoneOp(TypedDict):
    op: Literal["thinking_done"]
    path: NotRequired[list[str]]


class EndOp(TypedDict):
    op: Literal["end"]
    id: str | None
    path: NotRequired[list[str]]


class ItemOp(TypedDict):
    op: Literal["item"]
    item: ChatItem
    path: NotRequired[list[str]]


ChatOp = LiveOp | StreamOp | ThinkingDoneOp | EndOp | ItemOp


class WindowOp(TypedDict):
    """The turn ended: the view sets ``messages`` from these ids (TS: ``WindowOp``,
    chat-view-binding.ts)."""

    op: Literal["window"]
    ids: list[str]
    has_older: bool


class BatchMessage(TypedDict):
    """One numbered batch of view operations (TS: ``BatchMessage``, chat-view-binding.ts)."""

    kind: Literal["batch"]
    seq: int
    ops: list[ChatOp | WindowOp]




# --- the chat input's mention requests (mention-source.ts; see .mention_requests) --------
class MentionCandidatesRequest(TypedDict, total=False):
    """TS twin: ``MentionCandidatesRequest`` in js/src/chat/mention-source.ts."""

    prefix: str
    """What follows the ``@`` up to the caret."""



class MentionCandidatesReply(TypedDict):
    candidates: list[MentionCandidate]



class MentionPreviewRequest(TypedDict, total=False):
    mention: str
    """One mention as typed (``@df``, ``@In[5]``, ``@file:"a b.csv"``)."""



# --- the session sidebar (session-sidebar.ts, sidebar-delete.ts; see .session_sidebar) ---
class TodoBadge(TypedDict):
    """The plan badge of a row (TS: ``SessionRow.todo``, session-sidebar.ts)."""

    completed: int
    total: int



class SessionRow(TypedDict):
    """One row of the list (TS: ``SessionRow``, session-sidebar.ts)."""

    id: str
    title: str
    untitled: bool
    """No title yet (no prompt, no rename): the views show "New chat" in their language."""
    agent: str
    running: bool
    elsewhere: bool
    """The turn runs in another process (another kernel)."""
    last_message: str
    todo: TodoBadge | None
    created_at: float
    """When the session (a branch: the fork) was made, in seconds since the epoch."""
    updated_at: float
    message_count: int
    child_count: int
    """Sub-agent sessions its turns ran (they are not rows themselves)."""
    cost_usd: float | None
    """What the session has cost so far in USD, when known."""
    branch_of: str | None
    """A branch's: the session it was forked from."""



class OpenRequest(TypedDict):
    """``open``: show this stored session (TS: ``OpenRequest``, session-sidebar.ts)."""

    session_id: str



class RenameRequest(TypedDict):
    """``rename``: give a session the user's title; blank restores the automatic one
    (TS: ``RenameRequest``, session-sidebar.ts)."""

    session_id: str
    title: str



class DeleteRequest(TypedDict):
    """``delete``: take a session off the list, to be deleted unless undone (TS:
    ``DeleteRequest``, session-sidebar.ts)."""

    session_id: str



class DeletedSession(TypedDict):
    """The session the Undo bar offers back (TS: ``DeletedSession``, session-sidebar.ts)."""

    id: str
    title: str



class SessionReply(TypedDict):
    """The session the chat view shows now (TS: ``SessionReply``, session-sidebar.ts)."""

    session_id: str



# --- the header's panels (chat-view-binding.ts; see .header_panels) ----------------------
class OpenPanelRequest(TypedDict):
    """``open_panel``: the widget a header button opens (TS: ``OpenPanelRequest``,
    chat-view-binding.ts)."""

    panel: Literal["sessions", "tools"]



class OpenPanelReply(TypedDict):
    """The model id of that widget, for the view to draw (TS: ``OpenPanelReply``); or,
    with ``model_id`` empty, the ``empty`` text the drawer shows in its place (a chat kept
    in memory has no list of chats)."""

    model_id: str
    empty: NotRequired[str]



class SidePanelModel(TypedDict):
    """``side_panel``: the widget model a side panel shows (TS: ``SidePanelModel``,
    chat-view-binding.ts)."""

    model_id: str

