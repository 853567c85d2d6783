"""What the tool objects (a catalog, a config, a resolution, its steps, a diff, a load
report) show in a notebook, without their modules importing the code that draws it:
:mod:`neta_nb.tools.display` registers one renderer per class when the package loads
(:func:`renders`), and each object's ``display()`` asks for it here (:func:`render`).
So the data modules import no display code, and the display imports them, one way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Display", "Displayable", "render", "renders"]

_T = TypeVar("_T")
_RENDERERS: dict[type, Callable[[Any, str], Display]] = {}


@dataclass(frozen=True)
class Display:
    """A rendered display: Jupyter shows ``html`` (or ``markdown`` where HTML is not
    rendered); ``text`` is the one-line summary ``repr`` shows."""

    html: str
    markdown: str
    text: str

    def _repr_html_(self) -> str:
        return self.html

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.text


def renders(cls: type[_T]) -> Callable[[Callable[[_T, str], Display]],
                                       Callable[[_T, str], Display]]:
    """Register the decorated function as the display of ``cls`` (and its subclasses)."""
    def register(function: Callable[[_T, str], Display]) -> Callable[[_T, str], Display]:
        _RENDERERS[cls] = function
        return function
    return register


def render(obj: object, lang: str = "en") -> Display:
    """``obj`` drawn by the renderer registered for its class."""
    for cls in type(obj).__mro__:
        renderer = _RENDERERS.get(cls)
        if renderer is not None:
            return renderer(obj, lang)
    raise LookupError(f"no display for {type(obj).__name__} (neta_nb.tools.display draws "
                      "the tool objects; it is imported with neta_nb.tools)")


class Displayable:
    """What a tool object shows in a notebook: ``display(lang)`` and the rich forms
    Jupyter asks for (HTML, else markdown), all from the renderer registered for its
    class."""

    def display(self, lang: str = "en") -> Display:
        """This object as a table (HTML and markdown), in ``lang``."""
        return render(self, lang)

    def _repr_html_(self) -> str:
        return self.display().html

    def _repr_markdown_(self) -> str:
        return self.display().markdown
