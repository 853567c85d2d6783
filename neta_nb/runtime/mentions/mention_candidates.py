"""What an ``@`` can mention now, for the chat input's popup: the notebook's variables with
their type, the cells run lately, ``error`` when there is one, files under the working
directory — those whose key starts with what was typed, a bounded list.

A candidate's ``key`` is what follows the ``@`` (``df``, ``In[5]``, ``error``,
``file:data/x.csv``); ``mention`` is what choosing it writes (``neta_nb.runtime.mentions.mentions``
parses it back). Nothing here runs a notebook object's code beyond what ``list_variables``
would (``brief_description``), and a directory is read only as far as the list needs.
"""

from __future__ import annotations

import inspect
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypedDict

from ...tools.builtin.variables import brief_description, user_variables
from ...tools.builtin.workspace import display_path, resolve_inside
from ...tools.notebook.texts import last_exception
from .mentions import cells_slice

__all__ = ["MAX_CANDIDATES", "MentionCandidate", "mention_candidates"]

MAX_CANDIDATES = 40
RECENT_CELLS = 8
_DIRECTORY_ENTRIES = 2_000
"""Entries of one directory read at most while listing files."""


class MentionCandidate(TypedDict):
    """One row of the popup (TS twin: ``MentionCandidate`` in js/src/chat/mention-popup.ts)."""

    key: str
    mention: str
    kind: Literal["variable", "cell", "error", "file", "folder"]
    detail: str
    """A variable's type and size, a cell's first line; empty where the view words it
    itself (``error``, files)."""
    size: int | None
    """A file's size in bytes."""


def mention_candidates(prefix: str, *, namespace: dict[str, Any], working_dir: Path,
                       limit: int = MAX_CANDIDATES, page: bool = False) -> list[MentionCandidate]:
    """The candidates whose key starts with ``prefix`` (case-insensitive), at most
    ``limit``: variables, ``error``, recent cells, the page's cells where there is a
    ``page`` (``this``, and ``cells[`` whose slice is typed next: once it is, the row
    closes it), then files (listed once ``prefix`` starts with ``file:``; before that one
    ``file:`` row leads there)."""
    wanted = prefix.casefold()
    if wanted.startswith("file:"):
        return _files(prefix[len("file:"):], working_dir, limit)
    if page and wanted.startswith("cells[") and wanted != "cells[":
        return _typed_slice(prefix)
    found: list[MentionCandidate] = []
    for name in sorted(user_variables(namespace), key=lambda name: _code(namespace[name])):
        if len(found) >= limit:
            return found
        if name.casefold().startswith(wanted):
            found.append({"key": name, "mention": f"@{name}", "kind": "variable",
                          "detail": brief_description(namespace[name]), "size": None})
    extra: list[MentionCandidate] = []
    if last_exception() is not None:
        extra.append({"key": "error", "mention": "@error", "kind": "error", "detail": "",
                      "size": None})
    if page:
        extra.extend(_PAGE_CELLS)
    extra.extend(_recent_cells(namespace))
    extra.append({"key": "file:", "mention": "@file:", "kind": "folder", "detail": "",
                  "size": None})
    found.extend(c for c in extra if c["key"].casefold().startswith(wanted))
    return found[:limit]


def _code(value: Any) -> bool:
    """Whether ``value`` is code (a class, a function, a module) rather than data: the
    popup lists the user's data first, since a DataFrame is what one mentions most, and the
    classes and functions a notebook imports would otherwise crowd it out of a bare ``@``.
    The check reads the object's type only: no code of the value runs."""
    return isinstance(value, type | ModuleType) or inspect.isroutine(value)


_PAGE_CELLS: tuple[MentionCandidate, ...] = (
    # The view words their detail in the reader's language.
    {"key": "this", "mention": "@this", "kind": "cell", "detail": "", "size": None},
    {"key": "cells[", "mention": "@cells[", "kind": "cell", "detail": "", "size": None},
)


def _typed_slice(prefix: str) -> list[MentionCandidate]:
    """The row for a ``cells[…`` being typed: the mention closed as typed so far, when
    that is a slice (``cells[0:3`` → ``@cells[0:3]``); none when it cannot be one."""
    target = prefix if prefix.endswith("]") else prefix + "]"
    if cells_slice(target) is None:
        return []
    return [{"key": target, "mention": f"@{target}", "kind": "cell", "detail": "",
             "size": None}]


def _recent_cells(namespace: Mapping[str, Any]) -> list[MentionCandidate]:
    sources = namespace.get("_ih", namespace.get("In"))
    if not isinstance(sources, list):
        return []
    cells: list[MentionCandidate] = []
    for number in range(len(sources) - 1, 0, -1):
        source = sources[number]
        if not isinstance(source, str) or not source.strip():
            continue
        first = next(line.strip() for line in source.splitlines() if line.strip())
        cells.append({"key": f"In[{number}]", "mention": f"@In[{number}]", "kind": "cell",
                      "detail": first if len(first) <= 60 else first[:59] + "…", "size": None})
        if len(cells) >= RECENT_CELLS:
            break
    return cells


def _files(typed: str, working_dir: Path, limit: int) -> list[MentionCandidate]:
    """Entries of the directory ``typed`` names (up to its last ``/``) whose name starts
    with the rest; hidden ones only when that rest starts with a dot."""
    typed = typed.removeprefix('"')
    folder, _, start = typed.rpartition("/")
    try:
        directory = resolve_inside(working_dir, folder or ".")
        entries = os.scandir(directory)
    except OSError:
        return []
    wanted = start.casefold()
    found: list[tuple[bool, str, MentionCandidate]] = []
    with entries:
        for count, entry in enumerate(entries):
            if count >= _DIRECTORY_ENTRIES:
                break
            name = entry.name
            if not name.casefold().startswith(wanted) or (name.startswith(".")
                                                          and not start.startswith(".")):
                continue
            candidate = _file_candidate(entry, working_dir, directory)
            if candidate is not None:
                found.append((candidate["kind"] != "folder", name.casefold(), candidate))
    found.sort(key=lambda item: item[:2])  # folders first, then by name
    return [candidate for _, _, candidate in found[:limit]]


def _file_candidate(entry: os.DirEntry[str], working_dir: Path,
                    directory: Path) -> MentionCandidate | None:
    try:
        info = entry.stat()  # follows a symlink: its target decides, and must stay inside
        target = resolve_inside(working_dir, str(directory / entry.name))
    except OSError:
        return None
    path = display_path(working_dir, target)
    if stat.S_ISDIR(info.st_mode):
        path += "/"
        kind: Literal["file", "folder"] = "folder"
    elif stat.S_ISREG(info.st_mode):
        kind = "file"
    else:
        return None
    spaced = any(ch.isspace() for ch in path)
    # A folder's mention stays open (the list goes on inside it), a file's is complete.
    mention = (f'@file:"{path}' if spaced else f"@file:{path}") if kind == "folder" else (
        f'@file:"{path}"' if spaced else f"@file:{path}")
    return {"key": f"file:{path}", "mention": mention, "kind": kind, "detail": "",
            "size": info.st_size if kind == "file" else None}
