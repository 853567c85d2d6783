"""A chat ``send`` that carries cells: the context chip's (``cells``, the ids of the active
cell or of a selection) and the prompt's cell mentions (``@this``, ``@cells[3:5]``,
``@cell:<id>``). They are read from the page through this chat's own view when the prompt
is sent — the editor's text then, unsaved changes included — and go with the prompt as
its mention blocks (:mod:`neta_nb.runtime.mentions.page_mentions`). One that does not
resolve is the send's error reply: nothing is sent or stored, the input keeps the text."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ....messages import MentionPart
from ....runtime.mentions.mentions import MentionError
from ....runtime.mentions.page_mentions import page_mention_parts, page_mentions
from ....tools.notebook.page import NotebookPage
from ...base import RequestError

__all__ = ["MAX_CHIP_CELLS", "chip_cells", "reads_the_page", "send_with_cells"]

R = TypeVar("R")

MAX_CHIP_CELLS = 50
"""The most cells one send's chip may carry."""
_MAX_ID = 64


def chip_cells(command: Mapping[str, Any]) -> list[str]:
    """The ids of the cells a ``send``'s chip attaches (its ``cells``); a clear error for
    anything else."""
    cells = command.get("cells")
    if cells is None:
        return []
    if (not isinstance(cells, list) or len(cells) > MAX_CHIP_CELLS
            or not all(isinstance(c, str) and 0 < len(c) <= _MAX_ID for c in cells)):
        raise RequestError(f"a send's 'cells' must be a list of at most {MAX_CHIP_CELLS} "
                           f"cell ids (strings of 1 to {_MAX_ID} characters)")
    return list(dict.fromkeys(cells))


def reads_the_page(text: str, cells: Sequence[str]) -> bool:
    """Whether a send of ``text`` with the chip's ``cells`` reads cells from the page."""
    return bool(cells) or ("@" in text and bool(page_mentions(text)))


async def send_with_cells(text: str, cells: Sequence[str], page: NotebookPage, lang: str,
                          start: Callable[[Sequence[MentionPart]], R]) -> R:
    """``start`` the turn with the blocks of the cells the send carries, read from
    ``page`` now; a :class:`RequestError` in ``lang`` naming those that do not resolve."""
    try:
        parts = await page_mention_parts(text, page, cells)
    except MentionError as refused:
        raise RequestError(refused.message(lang)) from refused
    return start(parts)
