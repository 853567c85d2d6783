"""``SubagentCard``: one sub-agent's run (issue 15) — the child's name and task, a status
line (the tool or skill it runs now, its plan k/N, its tokens), its own Stop, and its whole
transcript, expandable. The chat view draws the same card nested in the parent's message
where the ``delegate`` call is (``ChatView`` follows sub-agents by itself); this widget
shows one run on its own, fed with the parent's events::

    card = SubagentCard.from_event(subagent_start, stop=lambda: session.handle_command(
        {"type": "stop", "subagent": subagent_start.id}))
    session.subscribe(card.apply)   # takes the subagent_* events of its run, ignores others

The transcript streams like the chat view's: numbered batches of ops, at most one per
frame, from the run's :class:`~neta_nb.runtime.projection.ConversationProjection` (see
``neta_nb.widgets.chat.drawing.subagent_parts``), and the traits hold it whole once the run is
over (so a saved notebook shows it); a view opened mid-run asks for ``sync``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any, cast

import traitlets

from ...events import Event, SubagentEndEvent, SubagentEvent, SubagentStartEvent
from ...labels import t
from ...runtime.projection import ConversationProjection
from ..base import NetaWidget, RequestError, handles, html_card
from ..chat.drawing.batcher import OpBatcher
from ..chat.drawing.render import full_text
from ..chat.drawing.static import static_text
from ..chat.drawing.subagent_parts import run_item, run_part
from ..chat.wire import ChatItem, FullText, NoReply
from ..streaming import FLUSH_INTERVAL
from .wire import SubagentFullTextRequest, SubagentSnapshot

__all__ = ["SubagentCard"]

_STATUS_COLOR = {"running": "#1976d2", "done": "#2e7d32", "error": "#d32f2f",
                 "cancelled": "#6e7781", "interrupted": "#6e7781"}

class SubagentCard(NetaWidget):
    """One sub-agent run. ``SubagentCard.from_event(subagent_start)``, then
    ``card.apply(event)`` with the parent's events (its ``subagent_event`` /
    ``subagent_end`` of this run are taken, the rest ignored). ``stop`` is what its Stop
    button calls."""

    _component = traitlets.Unicode("subagent-card").tag(sync=True)
    run_id = traitlets.Unicode("", help="The parent's `delegate` call id.").tag(sync=True)
    part = traitlets.Dict(help="The card as the chat view draws it (SubagentPart), whole "
                               "as of the last boundary.").tag(sync=True)
    expanded = traitlets.Bool(None, allow_none=True,
                              help="Open or folded; None: open while it runs.").tag(sync=True)
    can_stop = traitlets.Bool(False, help="A Stop action was given.").tag(sync=True)
    _seq = traitlets.Int(0).tag(sync=True)
    _static_traits = ("part", "lang")

    def __init__(self, *, agent: str = "", task: str = "", run_id: str = "",
                 stop: Callable[[], Any] | None = None,
                 flush_interval: float = FLUSH_INTERVAL, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._stop = stop
        self._transcript = ConversationProjection(path=(run_id or "run",), agent=agent,
                                                  task=task)
        self._batcher = OpBatcher(self.send, lambda _id: None,
                                  nested_source=self._nested_item, interval=flush_interval)
        with self.hold_sync():
            self.run_id = self._run_id
            self.can_stop = stop is not None
            self._publish()

    @classmethod
    def from_event(cls, event: SubagentStartEvent, **kwargs: Any) -> SubagentCard:
        return cls(agent=event.agent, task=event.task, run_id=event.id, **kwargs)

    @property
    def status(self) -> str:
        return self._transcript.status

    @property
    def _run_id(self) -> str:
        return self._transcript.path[-1]

    def _find(self, path: Any) -> ConversationProjection | None:
        """The run at ``path`` (the ids of the runs from this card's own)."""
        if not isinstance(path, list | tuple) or not path or path[0] != self._run_id:
            return None
        return self._transcript.find(path[1:])

    def apply(self, event: Event) -> None:
        """Follow an event of the parent: this run's ``subagent_event`` or
        ``subagent_end``; every other event is ignored (the parent's own, another run's).
        A child session followed directly passes its events wrapped:
        ``child.subscribe(lambda e: card.apply(SubagentEvent(id=run_id, event=e)))``."""
        run = self._transcript
        if not isinstance(event, SubagentEvent | SubagentEndEvent) or event.id != self._run_id:
            return
        if isinstance(event, SubagentEndEvent):
            run.finish(event, self._batcher)
            self._publish()
            return
        inner = event.event
        run.apply(inner, self._batcher)
        if inner.type not in ("token", "thinking_delta"):
            # The status line; the transcript itself travels in the batches (`messages`
            # None: "keep yours") until the run ends and the traits get it whole.
            self.part = cast("dict[str, Any]", run_part(run, whole=False))

    def _publish(self) -> None:
        """The whole card into the traits (a boundary: the run started or ended)."""
        self._batcher.flush()
        with self.hold_sync():
            self.part = cast("dict[str, Any]", run_part(self._transcript, whole=True))
            self._seq = self._batcher.seq

    def _nested_item(self, path: tuple[str, ...], item_id: str) -> ChatItem | None:
        found = self._find(path)
        return run_item(found, item_id) if found is not None else None

    @handles("sync")
    def _sync(self, _request: Mapping[str, object]) -> SubagentSnapshot:
        self._batcher.flush()
        return {"seq": self._batcher.seq, "part": run_part(self._transcript, whole=True)}

    @handles("stop")
    def _stop_request(self, _request: Mapping[str, object]) -> NoReply:
        if self._stop is None:
            raise RequestError("this card was given no way to stop its sub-agent")
        if self._transcript.status != "running":
            raise RequestError("this sub-agent is not running")
        self._stop()
        return {}

    @handles("full_text")
    def _full_text(self, request: SubagentFullTextRequest) -> FullText:
        message_id, field_name = request.get("message_id"), request.get("field")
        card_id = request.get("card_id")
        if not isinstance(message_id, str) or not isinstance(field_name, str):
            raise RequestError("full_text needs 'message_id' and 'field' strings")
        path = request.get("path") or [self._run_id]
        found = self._find(path)
        if found is None:
            raise RequestError("no such sub-agent run in this card")
        try:
            return {"text": full_text(found.messages, message_id, field_name, card_id)}
        except LookupError as exc:
            raise RequestError(str(exc.args[0])) from exc

    # --- representation ---------------------------------------------------------------
    def __repr__(self) -> str:
        run = self._transcript
        return f"SubagentCard({run.agent or '?'}: {run.status})"

    def _title(self) -> str:
        run = self._transcript
        return t("subagent_static", self.lang, agent=run.agent or "?",
                 status=t(f"subagent_{run.status}", self.lang), task=run.task)

    def _answer(self) -> str:
        items = self.part.get("messages") or []
        return static_text(self._transcript.agent or "?", items, self.lang)

    def _fallback_text(self) -> str:
        answer = self._answer()
        return self._title() + (f"\n{answer}" if answer else "")

    def _fallback_html(self) -> str:
        answer = self._answer()
        body = (f'<div style="white-space:pre-wrap;margin-top:6px">{html.escape(answer)}</div>'
                if answer else "")
        return html_card(html.escape(self._title()), body,
                         accent=_STATUS_COLOR.get(self._transcript.status, "#1976d2"))
