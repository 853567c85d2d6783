"""An ``%%agent`` cell's session, kept in the cell's own metadata on the notebook page, so
that a notebook reopened (a new kernel) goes on with the session its cells had.

The kernel cannot read or write a notebook by itself: it asks the page, through the chat
view the cell shows (the notebook tools' bridge, ``cell_metadata`` operation of the
JupyterLab extension, ``js/labextension/src/ops.ts``). What it keeps there::

    "metadata": {"neta_nb": {"agent_cell": {"session_id": "s_…", "prompt_id": "m_…"}}}

— the session's id and the cell's prompt in it (the turn a run of the cell asks again).
Where no page answers (no extension, a page that closed), nothing is kept or read: the
cell starts a session of its own, as it would the first time."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ...tools.notebook.page import NotebookError, NotebookPage

__all__ = ["METADATA_KEY", "PAGE_WAIT", "CellSession", "read_cell_session",
           "write_cell_session"]

log = logging.getLogger(__name__)

METADATA_KEY = "neta_nb"
"""The cell metadata entry of neta_nb; the cell's session is its ``agent_cell``."""
PAGE_WAIT = 10.0
"""Seconds the page may take to answer (the chat view it answers through has just been
shown)."""


@dataclass(frozen=True)
class CellSession:
    """The session a cell's metadata names, and the cell's prompt in it."""

    session_id: str
    prompt_id: str | None


async def _entry(page: NotebookPage, cell_id: str) -> dict[str, Any]:
    reply = await page.request("cell_metadata", {"cell_id": cell_id, "key": METADATA_KEY},
                               wait=PAGE_WAIT)
    value = reply.get("value")
    return dict(value) if isinstance(value, dict) else {}


async def read_cell_session(page: NotebookPage | None, cell_id: str) -> CellSession | None:
    """The session the cell's metadata names (``None``: none, or no page answered)."""
    if page is None:
        return None
    try:
        entry = (await _entry(page, cell_id)).get("agent_cell")
    except NotebookError as exc:
        log.info("the page did not say which session cell %s has: %s", cell_id, exc)
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("session_id"), str):
        return None
    prompt = entry.get("prompt_id")
    return CellSession(entry["session_id"], prompt if isinstance(prompt, str) else None)


async def write_cell_session(page: NotebookPage | None, cell_id: str,
                             kept: CellSession) -> bool:
    """Keep ``kept`` in the cell's metadata (the rest of the entry as it was); False when
    no page answered."""
    if page is None:
        return False
    try:
        entry = await _entry(page, cell_id)
        entry["agent_cell"] = {"session_id": kept.session_id, "prompt_id": kept.prompt_id}
        await page.request("cell_metadata", {"cell_id": cell_id, "key": METADATA_KEY,
                                             "value": entry}, wait=PAGE_WAIT)
    except NotebookError as exc:
        log.info("the page did not keep cell %s's session: %s", cell_id, exc)
        return False
    return True
