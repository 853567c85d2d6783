"""Widgets side by side in one cell, with one static form drawn from theirs: what a saved
notebook, GitHub and nbviewer show of a session list beside a chat (an ``ipywidgets.HBox``
shows there only its repr, or "model not found")."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .base import NetaWidget
from .static_form import StaticForm, display_view_and_form

__all__ = ["SideBySide"]


class SideBySide(ipywidgets.HBox):  # type: ignore[misc]
    """An ``HBox`` of ``children`` (a :class:`~neta_nb.widgets.SessionSidebar` and a
    :class:`~neta_nb.widgets.ChatView`, say). Displayed in a cell it is the live row, then a
    static form that lays the neta_nb children's own forms out in the same row and is kept
    current with them, children set later included (other children are named by their
    repr)::

        SideBySide(SessionSidebar(store, chat=chat), chat)   # or SideBySide(children=[…])
    """

    def __init__(self, *children: ipywidgets.DOMWidget, **kwargs: Any) -> None:
        if children:
            kwargs["children"] = list(children)
        super().__init__(**kwargs)
        self._static_form = StaticForm(self._static_parts)
        self._follow_children()
        self.observe(self._children_set, names="children")

    def _follow_children(self) -> None:
        self._static_form.follow([child._static_form for child in self.children
                                  if isinstance(child, NetaWidget)])

    def _children_set(self, _change: Any) -> None:
        self._follow_children()
        self._static_form.refresh()

    def _static_parts(self) -> tuple[str, str]:
        columns, texts = [], []
        for child in self.children:
            if isinstance(child, NetaWidget):
                rich, text = child._static_parts()
            else:
                text = repr(child)
                rich = f"<pre>{html.escape(text)}</pre>"
            columns.append(f'<div style="{_column_style(child)}">{rich}</div>')
            texts.append(text)
        row = ('<div style="display:flex;gap:12px;align-items:flex-start">'
               f'{"".join(columns)}</div>')
        return row, "\n\n".join(texts)

    def _ipython_display_(self) -> None:
        """The live row, then the static form (as :meth:`NetaWidget._ipython_display_`)."""
        display_view_and_form(self._repr_mimebundle_(), self._static_form)

    def close(self) -> None:
        form = getattr(self, "_static_form", None)  # absent when __init__ failed
        if form is not None:
            form.follow(())
            form.cancel()
        super().close()


def _column_style(child: ipywidgets.DOMWidget) -> str:
    """A child's width in the static row: a fixed one where its live layout has one (the
    session list's 280 px), else a share of what is left."""
    width = getattr(child.layout, "width", None)
    if isinstance(width, str) and width.strip():
        return f"flex:0 0 {html.escape(width, quote=True)};min-width:0"
    return "flex:1 1 0;min-width:0"
