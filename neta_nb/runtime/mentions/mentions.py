"""``@`` mentions in a prompt: finding them in the text, and resolving each to what the
model reads with the prompt.

One job, one set of rules for every caller: ``session.run`` / ``start`` (the parts a
prompt carries), the chat view's chips (:func:`preview_mention`: a chip shows exactly the
block that is sent) and its popup (``mention_candidates``). The JS twin of the parser,
``js/src/chat/mention-parse.ts``, is tested with the same vectors
(``tests/fixtures/mention_vectors.json``).

**What is a mention.** ``@`` starts one at the start of the text or after whitespace or an
opening bracket or quote (``( [ { < " '`` and their CJK forms). Anywhere else it is text:
inside a word (``a@b.com``), after another ``@`` or a backslash (``\\@df`` is how to write
one as text), and anything between a run of backticks and the next run of the same length
(a code span or a fenced block: the decorators of pasted code). Five forms:

* ``@name`` — a variable of the notebook, a Python identifier. No attribute access:
  ``@df.shape`` is ``@df`` followed by ``.shape`` (a sentence may end after a mention, and
  reading an attribute would run the object's code).
* ``@In[5]`` — the cell executed as ``[5]``: its source and its result (``Out[5]``; what a
  cell printed or displayed is not kept by the kernel).
* ``@error`` — the last exception that reached the notebook (``sys.last_value``, set by
  IPython, or by Python for an uncaught one) with its traceback; it means that even where
  a variable is named ``error``.
* ``@file:path`` — a file under the working directory, sent as an attachment is and by the
  same rules (:func:`~neta_nb.runtime.mentions.attachments.attachment_parts`: text files, images
  for models with vision, PDFs for models that read them), named by its path. The path
  runs to the next whitespace, without trailing sentence punctuation or closing brackets;
  ``@file:"a name with spaces.csv"`` quotes.
* ``@this``, ``@cells[3:5]``, ``@cell:<id>`` — cells of the notebook (kind ``notebook``),
  read from the page when the prompt is sent, not here: :mod:`.page_mentions` reads them
  and hands their blocks to :func:`prompt_parts` (``page_parts``); without them such a
  mention does not resolve. ``@this`` means that even where a variable is named ``this``.

**What the model reads.** The prompt exactly as typed, then for each distinct mention of
the first three forms a :class:`~neta_nb.messages.MentionPart`, sent as::

    <mention name="@df">
    df: pandas.DataFrame, shape 1000000×3, columns {a: int64, b: float64, c: str}
       a    b  c
    0  1  0.5  x
    …
    (5 of 1,000,000 rows)
    </mention>

at most :data:`MAX_MENTION_BYTES` (UTF-8) each, whatever the object's size: a variable is
its ``list_variables`` line and a longer preview (``preview_value``), by the same rules
(no code of a class the notebook defined runs). A file goes as its attachment part
(``<file name="data/x.csv">…</file>`` for a text file). Everything is plain text: cells,
outputs and tracebacks are the notebook's, not instructions.

A mention that does not resolve stops the prompt before anything is sent or stored:
:class:`MentionError` names each one and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypedDict

from ...labels import t
from ...messages import DocumentPart, FileTextPart, ImagePart, MentionPart, Part
from ...tools.builtin.variables import brief_description
from ...tools.builtin.workspace import (
    OutsideWorkingDirError,
    SymlinkLoopError,
    display_path,
    resolve_inside,
)
from ...tools.notebook.texts import cell_text, error_text, last_exception, variable_text
from .attachments import DEFAULT_ATTACHMENT_LIMITS, Attachment, AttachmentError, attachment_parts

__all__ = [
    "MAX_MENTION_BYTES",
    "Mention",
    "MentionError",
    "MentionPreview",
    "MentionProblem",
    "cells_slice",
    "find_mentions",
    "is_from_mention",
    "preview_mention",
    "prompt_parts",
    "resolve_mention",
]

MAX_MENTION_BYTES = 8 * 1024
"""The most one mention's block (:meth:`MentionPart.prompt_text`) takes, in UTF-8 bytes."""

MentionKind = Literal["variable", "cell", "error", "file", "notebook"]

_OPENERS = frozenset("([{<\"'“‘（【「『《")
_MENTION = re.compile(r"""@(?:
      In\[(?P<cell>[0-9]{1,9})\]
    | cells\[(?P<slice>[^\]\n]{0,40})\]
    | cell:(?P<cell_id>[A-Za-z0-9_-]{1,64})(?![\w-])
    | file:(?:"(?P<quoted>[^"\n]+)"|(?P<path>[^\s"]+))
    | (?P<name>[^\W\d]\w*)
)""", re.VERBOSE)
_CODE = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_PATH_END = ".,;:!?)]}>'\"。，；：！？）】」』》”’"


@dataclass(frozen=True, slots=True)
class Mention:
    """One mention found in a text."""

    kind: MentionKind
    target: str
    """The variable's name, the cell's number, ``error``, or the file's path."""
    start: int
    end: int
    """Where it is in the text (``text[start:end]`` is the mention as typed)."""

    @property
    def name(self) -> str:
        """The mention written canonically: ``@df``, ``@In[5]``, ``@error``,
        ``@file:data/x.csv`` (quoted when the path has whitespace)."""
        if self.kind == "cell":
            return f"@In[{self.target}]"
        if self.kind == "file":
            spaced = any(ch.isspace() for ch in self.target)
            return f'@file:"{self.target}"' if spaced else f"@file:{self.target}"
        return f"@{self.target}"


def find_mentions(text: str) -> list[Mention]:
    """The mentions in ``text``, in order (see the module docstring for the rules)."""
    if "@" not in text:
        return []
    code = [m.span() for m in _CODE.finditer(text)] if "`" in text else []
    found = []
    for match in _MENTION.finditer(text):
        start = match.start()
        if start > 0 and not (text[start - 1].isspace() or text[start - 1] in _OPENERS):
            continue
        if any(left <= start < right for left, right in code):
            continue
        mention = _mention(match, text)
        if mention is not None:
            found.append(mention)
    return found


def _mention(match: re.Match[str], text: str) -> Mention | None:
    """The mention ``match`` (of :data:`_MENTION`, where a mention may start) is, if any."""
    start, end = match.span()
    if match["cell"] is not None:
        return Mention("cell", str(int(match["cell"])), start, end)
    if match["slice"] is not None:
        return Mention("notebook", "cells[" + "".join(match["slice"].split()) + "]", start, end)
    if match["cell_id"] is not None:
        return Mention("notebook", "cell:" + match["cell_id"], start, end)
    if match["quoted"] is not None:
        return Mention("file", match["quoted"], start, end)
    if match["path"] is not None:
        path = match["path"].rstrip(_PATH_END)
        return (Mention("file", path, start, end - (len(match["path"]) - len(path)))
                if path else None)
    name = match["name"]
    if name in ("file", "cell") and text.startswith(":", end):
        return None  # `@file:` with no path yet, `@cell:` with no id
    if name in ("error", "this"):
        return Mention("error" if name == "error" else "notebook", name, start, end)
    return Mention("variable", name, start, end)


# --- resolving ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MentionProblem:
    """Why a mention does not resolve: a label's ``code`` and its ``params``."""

    mention: str
    code: str
    params: Mapping[str, object] = field(default_factory=dict)

    def text(self, lang: str = "en") -> str:
        return t(self.code, lang, **self.params)


class MentionError(ValueError):
    """Mentions of a prompt that do not resolve; nothing was sent or stored, the session
    is ready for the next prompt. ``problems`` says which and why."""

    def __init__(self, problems: Sequence[MentionProblem]) -> None:
        self.problems = list(problems)
        super().__init__(self.message("en"))

    def message(self, lang: str = "en") -> str:
        listed = "; ".join(f"{p.mention} ({p.text(lang)})" for p in self.problems)
        return t("mention_unknown_sent", lang, mentions=listed)


class _Unresolved(Exception):
    def __init__(self, code: str, **params: object) -> None:
        super().__init__(code)
        self.code, self.params = code, params


@dataclass(frozen=True, slots=True)
class Resolved:
    """A mention resolved: the block the model reads, or the file it attaches."""

    mention: Mention
    part: MentionPart | None = None
    file: Attachment | None = None
    summary: str = ""
    """A few words for a chip: a variable's type and size, a cell's first line, the
    exception's line."""


def resolve_mention(mention: Mention, *, namespace: Mapping[str, Any],
                    working_dir: Path) -> Resolved:
    """What ``mention`` refers to now; :class:`MentionError` when it refers to nothing."""
    try:
        return _resolve(mention, namespace, working_dir)
    except _Unresolved as why:
        raise MentionError([MentionProblem(mention.name, why.code, why.params)]) from None


def _resolve(mention: Mention, namespace: Mapping[str, Any], working_dir: Path,
             page_parts: Mapping[str, MentionPart] | None = None) -> Resolved:
    text: str | None
    if mention.kind == "notebook":
        _check_cells_mention(mention.target)
        part = (page_parts or {}).get(mention.name)
        if part is None:  # read through the page when sent (page_mentions.py), not here
            raise _Unresolved("mention_needs_page", mention=mention.name)
        return Resolved(mention, part=part)
    if mention.kind == "variable":
        if mention.target not in namespace:
            raise _Unresolved("mention_no_variable", name=mention.target)
        value = namespace[mention.target]
        text, summary = variable_text(mention.target, value), brief_description(value)
    elif mention.kind == "cell":
        text = cell_text(int(mention.target), namespace)
        if text is None:
            raise _Unresolved("mention_no_cell", number=mention.target)
        summary = next((line for line in text.splitlines()[1:] if line.strip()), "")
    elif mention.kind == "error":
        exception = last_exception()
        if exception is None:
            raise _Unresolved("mention_no_error")
        text = error_text(exception)
        summary = text.rstrip().rpartition("\n")[2]
    else:
        return Resolved(mention, file=_mentioned_file(mention.target, working_dir))
    summary = summary.strip()
    return Resolved(mention, part=_bounded_part(mention.name, text),
                    summary=summary if len(summary) <= 80 else summary[:79] + "…")


def _mentioned_file(path: str, working_dir: Path) -> Attachment:
    try:
        target = resolve_inside(working_dir, path)
    except (OutsideWorkingDirError, SymlinkLoopError):
        raise _Unresolved("mention_outside", path=path) from None
    if not target.exists():
        raise _Unresolved("mention_no_file", path=path)
    try:
        file = Attachment.from_path(target, max_bytes=DEFAULT_ATTACHMENT_LIMITS.max_file_bytes)
    except AttachmentError as error:
        raise _Unresolved("mention_file_refused", path=path, detail=str(error)) from None
    return replace(file, name=display_path(working_dir, target))


def _bounded_part(name: str, text: str) -> MentionPart:
    """The block for ``text``, cut (with a note) to :data:`MAX_MENTION_BYTES`."""
    part = MentionPart(mention=name, text=text)
    over = len(part.prompt_text().encode("utf-8", "surrogatepass")) - MAX_MENTION_BYTES
    while over > 0:
        data = text.encode("utf-8", "surrogatepass")
        keep = data[:max(0, len(data) - over - 64)].decode("utf-8", "ignore")
        text = f"{keep}\n… (cut: {len(text) - len(keep):,} more characters)"
        part = MentionPart(mention=name, text=text)
        over = len(part.prompt_text().encode("utf-8", "surrogatepass")) - MAX_MENTION_BYTES
    return part


def _resolve_all(text: str, namespace: Mapping[str, Any], working_dir: Path,
                 page_parts: Mapping[str, MentionPart] | None = None) -> list[Resolved]:
    """Every distinct mention of ``text`` resolved; :class:`MentionError` names all that
    do not resolve."""
    resolved: list[Resolved] = []
    problems: list[MentionProblem] = []
    seen: set[str] = set()
    for mention in find_mentions(text):
        if mention.name in seen:
            continue
        seen.add(mention.name)
        try:
            resolved.append(_resolve(mention, namespace, working_dir, page_parts))
        except _Unresolved as why:
            problems.append(MentionProblem(mention.name, why.code, why.params))
    if problems:
        raise MentionError(problems)
    return resolved


_SLICE = re.compile(r"cells\[(-?[0-9]{1,9})?:(-?[0-9]{1,9})?(?::(-?[0-9]{1,9})?)?\]")


def _check_cells_mention(target: str) -> None:
    """Raise the problem of a ``cells[…]`` mention whose slice is not one (``_Unresolved``)."""
    if target.startswith("cells[") and cells_slice(target) is None:
        raise _Unresolved("mention_bad_slice", mention=f"@{target}")


def cells_slice(target: str) -> slice | None:
    """The slice a ``cells[start:stop]`` (or ``cells[start:stop:step]``) mention's target
    writes, as Python reads it: 0 the first cell, ``stop`` left out, negatives from the
    end, either bound optional; ``None`` when it is not such a slice (``cells[3]``,
    ``cells[a:b]``, a step of 0)."""
    found = _SLICE.fullmatch(target)
    if found is None:
        return None
    start, stop, step = (None if bound is None else int(bound) for bound in found.groups())
    return None if step == 0 else slice(start, stop, step)


def prompt_parts(text: str, attachments: Sequence[Any] | None,
                 mentions: Sequence[MentionPart] | None, *, namespace: Mapping[str, Any],
                 working_dir: Path, capabilities: frozenset[str], model: str,
                 page_parts: Sequence[MentionPart] = ()) -> list[Part]:
    """The parts a prompt carries after its text: the blocks of its mentions (resolved
    here, unless ``mentions`` gives them: ``()`` for none), then the files — those its
    mentions name first, then ``attachments`` — checked together against the attachment
    limits. Raises :class:`MentionError` or :class:`AttachmentError`.

    ``page_parts``: the cells the page gave for the prompt when it was sent
    (:func:`~.page_mentions.page_mention_parts`), by their mention — those of its
    ``@this``, ``@cells[…]`` and ``@cell:…`` mentions, in their place, and after them any
    other (a cell the chat's chip attaches)."""
    files: list[Attachment] = []
    parts: list[Part] = []
    by_name = {part.mention: part for part in page_parts}
    if mentions is not None:
        parts.extend(part.model_copy() for part in mentions)
    elif "@" in text:
        for item in _resolve_all(text, namespace, working_dir, by_name):
            if item.part is not None:
                parts.append(item.part)
                by_name.pop(item.mention.name, None)
            elif item.file is not None:
                files.append(item.file)
    if mentions is None:
        parts.extend(by_name.values())
    if files or attachments:
        parts.extend(attachment_parts([*files, *(attachments or ())],
                                      capabilities=capabilities, model=model))
    return parts


def is_from_mention(part: Part, text: str, working_dir: Path) -> bool:
    """Whether ``part`` of a prompt of ``text`` came from one of its mentions (a block, or
    the file an ``@file:`` named): an edited prompt resolves its mentions anew."""
    if isinstance(part, MentionPart):
        return True
    if not isinstance(part, FileTextPart | ImagePart | DocumentPart) or "@file:" not in text:
        return False
    names = set()
    for mention in find_mentions(text):
        if mention.kind == "file":
            try:
                names.add(display_path(working_dir, resolve_inside(working_dir,
                                                                   mention.target)))
            except (OSError, ValueError):
                continue
    return part.name in names


# --- what a chip shows ----------------------------------------------------------------------

class MentionPreview(TypedDict, total=False):
    """A chip's content (TS twin: ``MentionPreview`` in js/src/chat/mention-source.ts)."""

    mention: str
    kind: MentionKind
    ok: bool
    rendering: str
    """What the model reads for it (when ``ok``)."""
    summary: str
    """A few words for the chip (when ``ok``): a type and size, a cell's first line, the
    exception, a file's media type."""
    size: int
    """A mentioned file's size in bytes."""
    problem: str
    """Why it is unknown (when not ``ok``), in the view's language."""


def preview_mention(text: str, *, namespace: Mapping[str, Any], working_dir: Path,
                    capabilities: frozenset[str], model: str,
                    lang: str = "en") -> MentionPreview:
    """What a chip of the chat's input shows for the one mention ``text`` (``@df``): its
    canonical ``mention``, ``kind``, and either ``ok`` with the ``rendering`` the model
    will read — the same bytes :func:`prompt_parts` sends — or not ``ok`` with the
    ``problem`` in ``lang``."""
    found = find_mentions(text)
    if len(found) != 1 or found[0].start != 0 or found[0].end != len(text):
        raise ValueError(f"{text!r} is not one mention")
    mention = found[0]
    reply: MentionPreview = {"mention": mention.name, "kind": mention.kind, "ok": False}
    try:
        if mention.kind == "notebook":  # read from the page when the prompt is sent
            _check_cells_mention(mention.target)
            note = t("mention_read_when_sent", lang)
            reply["ok"], reply["rendering"], reply["summary"] = True, note, note
            return reply
        resolved = _resolve(mention, namespace, working_dir)
        summary = resolved.summary
        if resolved.part is not None:
            rendering = resolved.part.prompt_text()
        else:
            assert resolved.file is not None
            [part] = attachment_parts([resolved.file], capabilities=capabilities, model=model)
            rendering, summary = _file_rendering(part), part.media_type
            reply["size"] = part.size
    except _Unresolved as why:
        reply["problem"] = t(why.code, lang, **why.params)
    except AttachmentError as error:
        reply["problem"] = t("mention_file_refused", lang, path=mention.target,
                             detail=str(error))
    else:
        reply["ok"], reply["rendering"], reply["summary"] = True, rendering, summary
    return reply


def _file_rendering(part: ImagePart | DocumentPart | FileTextPart) -> str:
    """A mentioned file as the model gets it: a text file's block as sent; of an image or a
    PDF (sent as such) a line naming it."""
    if isinstance(part, FileTextPart):
        return part.prompt_text()
    if isinstance(part, ImagePart):
        return f"[image {part.name}: {part.describe()}, {part.size:,} bytes]"
    return f"[PDF document {part.name}: {part.size:,} bytes]"
