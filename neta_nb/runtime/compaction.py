"""Context compaction: fold older turns into one summary so a long session keeps fitting
the model's window, without losing the plan.

The history is cut into *blocks* that may not be separated: a user message, or an
assistant message together with the tool results that answer its calls. The most recent
``keep_turns`` turns stay verbatim (their thinking signatures stay valid because nothing
in them changes); everything before is rendered as a transcript and summarised by the
session's own model. The model's new view is::

    [summary (user)] [active plan (user), if any] [kept blocks ...]

The full original history is never touched; only the view the model sees changes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..encodable import encodable
from ..messages import (
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    count_characters,
)
from ..providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    StreamDone,
    TextDelta,
    UsageUpdate,
)
from ..store.session_store import CompactedView, CompactionRecord

__all__ = [
    "SUMMARY_HEADER",
    "SUMMARY_SYSTEM_PROMPT",
    "Compaction",
    "CompactionError",
    "CompactionPlan",
    "Summary",
    "compact_view",
    "compacted_prefix",
    "estimate_tokens_after",
    "plan_compaction",
    "render_transcript",
    "summarise",
    "summary_message",
]

log = logging.getLogger(__name__)

SUMMARY_SYSTEM_PROMPT = (
    "You compress conversations. Summarise the transcript you are given so the "
    "conversation can continue without it: the user's goals and constraints, decisions "
    "made, facts and numbers found, files and names involved, tool results that still "
    "matter, and open questions. Be concise and factual; use short Markdown bullet points. "
    "Do not invent anything and do not address the user."
)
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]"
_RESULT_LIMIT = 2_000  # characters of one tool result kept in the transcript


class CompactionError(RuntimeError):
    """Compaction could not be done; the history is unchanged."""


@dataclass(frozen=True)
class CompactionPlan:
    folded: list[Message]
    kept: list[Message]


def _blocks(view: Sequence[Message]) -> list[list[Message]]:
    """Split a history into blocks that must stay together."""
    blocks: list[list[Message]] = []
    for message in view:
        if message.role == "tool" and blocks and blocks[-1][0].role == "assistant":
            blocks[-1].append(message)
        else:
            blocks.append([message])
    return blocks


def plan_compaction(view: Sequence[Message], *, keep_turns: int = 2,
                    min_kept_blocks: int = 2) -> CompactionPlan | None:
    """Which messages to fold and which to keep, or ``None`` when nothing can be folded.

    Kept: the last ``keep_turns`` turns (a turn starts at a real user message). When those
    would be more than three quarters of the history, fewer turns are kept, down to the
    last one; when even the last turn is — one long agentic turn — the cut falls between
    its blocks, keeping the last ``min_kept_blocks``. A tool call is never separated from
    its result.
    """
    if keep_turns < 1:
        raise ValueError("keep_turns must be at least 1")
    blocks = _blocks(view)
    total = count_characters(view)
    turn_starts = [n for n, block in enumerate(blocks)
                   if block[0].role == "user" and not block[0].metadata.compacted]

    def too_big(cut: int) -> bool:
        return 4 * count_characters([m for block in blocks[cut:] for m in block]) > 3 * total

    cut = turn_starts[-keep_turns] if len(turn_starts) > keep_turns else 0
    for start in turn_starts[-keep_turns + 1:] if keep_turns > 1 else []:
        if not too_big(cut):
            break
        cut = start  # keep one turn fewer
    if too_big(cut):
        cut = max(cut, len(blocks) - min_kept_blocks)
    folded = [m for block in blocks[:cut] for m in block]
    kept = [m for block in blocks[cut:] for m in block]
    if not kept or all(m.metadata.compacted for m in folded):
        return None  # nothing, or only an earlier summary, would be folded
    return CompactionPlan(folded=folded, kept=kept)


def render_transcript(messages: Sequence[Message]) -> str:
    """The folded messages as plain text for the summarising call. Thinking is left
    out (it is the model's scratchpad, and signatures cannot be carried into text)."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                who = "Earlier summary" if message.metadata.compacted else (
                    "User" if message.role == "user" else "Assistant")
                lines.append(f"{who}: {part.text.strip()}")
            elif isinstance(part, ToolCallPart):
                args = part.raw_args if part.raw_args is not None else json.dumps(
                    part.args, ensure_ascii=False)
                lines.append(f"Assistant called {part.name}({args})")
            elif isinstance(part, ToolResultPart):
                content = part.content
                if len(content) > _RESULT_LIMIT:
                    content = content[:_RESULT_LIMIT] + f" … [{len(part.content):,} characters]"
                status = "error" if part.is_error else "result"
                lines.append(f"Tool {part.name} {status}: {content}")
            elif isinstance(part, ThinkingPart):
                continue
        if message.metadata.interrupted:
            lines.append(f"(this answer was interrupted: {message.metadata.interrupted})")
    return "\n\n".join(lines)


def summary_message(summary: str) -> Message:
    message = Message.user(f"{SUMMARY_HEADER}\n\n{summary.strip()}")
    message.metadata.compacted = True
    return message


def compacted_prefix(summary: str, plan: str | None) -> list[Message]:
    """What replaces the folded messages in the model's view: the summary, then the
    active plan (``TodoStore.format_for_injection``) so the plan survives compaction."""
    prefix = [summary_message(summary)]
    if plan is not None:
        injected = Message.user(plan)
        injected.metadata.compacted = True
        prefix.append(injected)
    return prefix


@dataclass(frozen=True)
class Summary:
    """What the summarising call produced, and what it cost."""

    text: str
    usage: Usage | None
    unusable_usage: str | None = None
    """What the server reported as usage that was unusable (the usage is then unknown)."""


async def summarise(provider: Provider, folded: Sequence[Message]) -> Summary:
    """Summarise ``folded`` with the session's own model (``purpose="summary"``, thinking
    off). Any failure, or an answer with no text or no final event, raises
    :class:`CompactionError`: the caller then leaves the history as it was."""
    request = ModelRequest(system_prompt=SUMMARY_SYSTEM_PROMPT,
                           messages=[Message.user(render_transcript(folded))],
                           think_level="off", purpose="summary")
    chunks: list[str] = []
    usage: Usage | None = None
    unusable: str | None = None
    finished = False
    try:
        async for piece in provider.stream(request):
            if isinstance(piece, TextDelta):
                chunks.append(piece.text)
            elif isinstance(piece, UsageUpdate):
                piece = piece.checked()
                usage = piece.usage
                unusable = piece.unusable or unusable
            elif isinstance(piece, StreamDone):
                finished = True
    except ProviderError as exc:
        raise CompactionError(f"Compacting the conversation failed: {exc.message}. "
                              f"The history was left as it was.") from exc
    except Exception as exc:
        log.exception("the summarising call failed")
        raise CompactionError(f"Compacting the conversation failed: "
                              f"{type(exc).__name__}: {exc}. The history was left as "
                              f"it was.") from exc
    text = encodable("".join(chunks).strip())
    if not finished or not text:
        raise CompactionError("Compacting the conversation failed: the model returned "
                              "no summary. The history was left as it was.")
    return Summary(text=text, usage=usage, unusable_usage=unusable)


def estimate_tokens_after(tokens_before: int, old_view: Sequence[Message],
                          kept: Sequence[Message], summary_tokens: int,
                          injected: Sequence[Message]) -> int:
    """The context the new view will occupy, until the next model call reports it exactly:
    the kept messages are charged their share (by characters) of the last real figure,
    the summary what its call really produced, the injected plan ~4 characters a token."""
    old_chars = count_characters(old_view)
    kept_tokens = round(tokens_before * count_characters(kept) / old_chars) if old_chars else 0
    return kept_tokens + summary_tokens + count_characters(injected) // 4


@dataclass(frozen=True)
class Compaction:
    """A done compaction: the model's new view, and what the store and the chat's marker
    keep of it."""

    view: list[Message]
    stored: CompactedView
    """The new view as stored (its prefix, and where the kept history starts)."""
    record: CompactionRecord
    unusable_usage: str | None = None
    """See :attr:`Summary.unusable_usage`."""


async def compact_view(provider: Provider, view: Sequence[Message], *, keep_turns: int,
                       plan: str | None, tokens_before: int,
                       after_message: int) -> Compaction | None:
    """Fold the older part of ``view`` into a summary (plus the active ``plan``), or
    ``None`` when nothing is old enough. ``tokens_before`` is the window's last real
    figure, ``after_message`` the length of the full history now. Raises
    :class:`CompactionError` when the summarising call fails."""
    cut = plan_compaction(view, keep_turns=keep_turns)
    if cut is None:
        return None
    summary = await summarise(provider, cut.folded)
    prefix = compacted_prefix(summary.text, plan)
    summary_tokens = summary.usage.output_tokens if summary.usage else len(summary.text) // 4
    after = estimate_tokens_after(tokens_before, view, cut.kept, summary_tokens, prefix[1:])
    record = CompactionRecord(after_message=after_message, tokens_before=tokens_before,
                              tokens_after=after, messages_folded=len(cut.folded),
                              usage=summary.usage)
    return Compaction(view=[*prefix, *cut.kept], record=record,
                      stored=CompactedView(prefix=prefix, kept_from=cut.kept[0].id),
                      unusable_usage=summary.unusable_usage)
