"""Rich tool output: what a tool shows besides text, as a notebook cell would show it.

A tool handler may return a :class:`RichResult` — ``text`` for the model and ``items``
for the card — or build one from objects with :meth:`RichResult.of`, which understands
what a notebook displays: matplotlib figures, plotly figures (as PNG when its image
export is installed), PIL images, and anything with IPython's ``_repr_png_`` /
``_repr_jpeg_`` / ``_repr_svg_`` / ``_repr_html_`` / ``_repr_markdown_`` methods
(pandas DataFrames show as HTML tables).

Everything is bounded by :class:`RichLimits`: images are downscaled to a longest side
(Pillow) and re-encoded as JPEG when the PNG is still too large, a result keeps at most
``max_items`` items, HTML and markdown are cut. Raster images (PNG, JPEG, GIF, WebP) also
go to the model as images; HTML, SVG and markdown are for the card only — the model reads
the text (a DataFrame's ``repr``).

HTML is stored as the object produced it; the widgets sanitize it when they show it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import DisplayItem, ImagePart

__all__ = [
    "CELL_EDIT_TYPE",
    "MODEL_IMAGE_TYPES",
    "RICH_TYPES",
    "CapturedItems",
    "RichLimits",
    "RichResult",
    "capture_figures",
    "describe_items",
    "display_items",
    "image_item",
    "items_from_bundle",
]

log = logging.getLogger(__name__)

MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types every vision API accepts; other display items stay on the card."""

_TEXT_TYPES = ("image/svg+xml", "text/html", "text/markdown")
CELL_EDIT_TYPE = "application/vnd.neta-nb.cell-edit+json"
"""A proposed notebook edit and what the user decided (``neta_nb.tools.notebook``): its
card draws the diff; ``text`` is the JSON, bounded where it is made."""
CELL_EDIT_CHARS = 600_000
RICH_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "text/html", "text/markdown")
"""What a notebook shows richly, in the order it prefers when an object offers several."""


@dataclass(frozen=True, slots=True)
class RichLimits:
    """Bounds of one tool result's display items."""

    max_side: int = 1024
    """Longest image side in pixels; larger images are downscaled."""
    max_items: int = 8
    """Items kept per result; the rest are counted in the text."""
    max_image_bytes: int = 1_500_000
    """An image still larger after downscaling is re-encoded as JPEG, then dropped."""
    max_text_chars: int = 200_000
    """HTML, SVG and markdown longer than this are cut (SVG and HTML: dropped)."""
    max_pixels: int = 50_000_000
    """Images with more pixels are left out before they are decoded (50 megapixels of
    RGBA are 200 MB of memory)."""


DEFAULT_LIMITS = RichLimits()


@dataclass(slots=True)
class RichResult:
    """What a tool returns when it has more to show than text.

    ``text`` is what the model reads (keep it meaningful on its own: a model without
    vision sees only this and a one-line description of the images). ``items`` are shown
    on the tool card; the raster images among them are also sent to models with vision.
    """

    text: str = ""
    items: list[DisplayItem] = field(default_factory=list)
    dropped: int = 0
    """Items left out by :class:`RichLimits` (said in :meth:`model_text`)."""
    declined: bool = False
    """The user declined what the tool asked (a proposed notebook edit rejected): its card
    shows the call as rejected, and the model reads the text as an error result, as it
    reads a call the user did not allow."""

    @classmethod
    def of(cls, *objects: Any, text: str = "",
           limits: RichLimits = DEFAULT_LIMITS) -> RichResult:
        """A result showing ``objects`` (figures, images, DataFrames, ...)."""
        result = cls(text=text)
        for obj in objects:
            result.add(display_items(obj, limits))
        result.bound(limits)
        return result

    def add(self, items: Iterable[DisplayItem]) -> None:
        self.items.extend(items)

    def checked(self, limits: RichLimits = DEFAULT_LIMITS) -> RichResult:
        """This result with at most ``max_items`` items, each checked as
        :func:`display_items` checks a :class:`DisplayItem` (what a handler returns is
        held to the limits as what it displays is); the rest counted in ``dropped``."""
        kept = self.items[:limits.max_items]
        items = [checked for item in kept for checked in _checked_item(item, limits)]
        return RichResult(text=self.text, items=items,
                          dropped=self.dropped + len(self.items) - len(items),
                          declined=self.declined)

    def bound(self, limits: RichLimits = DEFAULT_LIMITS) -> None:
        if len(self.items) > limits.max_items:
            self.dropped += len(self.items) - limits.max_items
            del self.items[limits.max_items:]

    def images(self) -> list[ImagePart]:
        """The items a vision model receives."""
        return [ImagePart(media_type=item.media_type, data=item.data, size=item.size,
                          width=item.width, height=item.height, name=item.name)
                for item in self.items if item.media_type in MODEL_IMAGE_TYPES and item.data]

    def model_text(self) -> str:
        """``text`` plus a line saying what was displayed, so the model knows a figure
        exists even when it cannot see it."""
        summary = describe_items(self.items, self.dropped)
        if not summary:
            return self.text
        return f"{self.text}\n\n[Displayed: {summary}]" if self.text else f"[Displayed: {summary}]"


def describe_items(items: Iterable[DisplayItem], dropped: int = 0) -> str:
    """``1 figure (640×480 PNG), 1 HTML table`` — what a result displayed, in words. A
    notebook edit's card is not counted: the result's text says what became of it."""
    words = []
    for item in items:
        if item.media_type == CELL_EDIT_TYPE:
            continue
        if item.media_type.startswith("image/"):
            kind = "image/svg" if item.media_type == "image/svg+xml" else item.media_type
            size = f"{item.width}×{item.height} " if item.width else ""
            words.append(f"image ({size}{kind.split('/')[-1].upper()})")
        elif item.media_type == "text/html":
            words.append("HTML")
        else:
            words.append("markdown")
    if dropped:
        words.append(f"{dropped} more left out (limit)")
    return ", ".join(words)


# --- one object → display items ---------------------------------------------------------


def display_items(obj: Any, limits: RichLimits = DEFAULT_LIMITS) -> list[DisplayItem]:
    """How a notebook would display ``obj``; ``[]`` for objects shown as plain text."""
    if isinstance(obj, DisplayItem):
        return _checked_item(obj, limits)
    if isinstance(obj, RichResult):
        return [checked for item in obj.items for checked in _checked_item(item, limits)]
    figure = _matplotlib_figure(obj)
    if figure is not None:
        return [_figure_item(figure, limits)]
    if _is_plotly_figure(obj):
        return _plotly_items(obj, limits)
    if _is_pil_image(obj):
        buffer = io.BytesIO()
        obj.save(buffer, format="PNG")
        item = image_item(buffer.getvalue(), "image/png", limits)
        return [item] if item is not None else []
    bundle: dict[str, Any] = {}
    mimebundle = _call_repr(obj, "_repr_mimebundle_")
    if isinstance(mimebundle, tuple):
        mimebundle = mimebundle[0]
    if isinstance(mimebundle, Mapping):
        bundle.update(mimebundle)
    for mime, method in (("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"),
                         ("image/svg+xml", "_repr_svg_"), ("text/html", "_repr_html_"),
                         ("text/markdown", "_repr_markdown_")):
        if mime not in bundle:
            value = _call_repr(obj, method)
            if value is not None:
                bundle[mime] = value
    return items_from_bundle(bundle, limits)


def _checked_item(item: DisplayItem, limits: RichLimits) -> list[DisplayItem]:
    """A display item a tool built itself, held to the same rules as the ones made here:
    its bytes must be the image it claims (else every later request of the session would
    carry an image the API rejects), within the limits; text kinds are bounded."""
    kind = item.media_type
    checked: DisplayItem | None = None
    if kind in _TEXT_TYPES:
        checked = _text_item(kind, item.text, limits) if item.text else None
    elif kind == CELL_EDIT_TYPE and item.text and len(item.text) <= CELL_EDIT_CHARS:
        checked = DisplayItem(media_type=kind, text=item.text, size=len(item.text))
    elif kind.startswith("image/") and item.data is not None:
        raw = _b64decode(item.data, strict=True)
        checked = image_item(raw, kind, limits) if raw else None
    if checked is None:
        log.info("a %s display item a tool returned is left out", kind)
        return []
    checked.name = item.name
    return [checked]


def items_from_bundle(bundle: Mapping[str, Any],
                      limits: RichLimits = DEFAULT_LIMITS) -> list[DisplayItem]:
    """The best item of an IPython mime bundle (``{"image/png": ..., "text/html": ...}``)."""
    for mime in RICH_TYPES:
        value = bundle.get(mime)
        if value is None:
            continue
        if isinstance(value, tuple):  # (data, metadata) from some reprs
            value = value[0]
        item: DisplayItem | None
        if mime in _TEXT_TYPES:
            item = _text_item(mime, value, limits)
        else:
            raw = value if isinstance(value, bytes) else _b64decode(value)
            item = image_item(raw, mime, limits) if raw else None
        if item is not None:
            return [item]
    return []


def image_item(data: bytes, media_type: str,
               limits: RichLimits = DEFAULT_LIMITS) -> DisplayItem | None:
    """An image item, downscaled to ``limits.max_side``; ``None`` when it is not a
    readable image or cannot be made small enough."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            # From the header, before decoding: a few KB of PNG can decode to gigabytes.
            if width * height > limits.max_pixels:
                log.info("a %s display item of %d×%d pixels is left out", media_type,
                         width, height)
                return None
            image.load()
            # The bytes decide, not the declared type: a vision API rejects a JPEG sent
            # as image/png; a BMP or TIFF (which no API takes) is converted to PNG.
            actual = Image.MIME.get(image.format or "", "")
            if actual in MODEL_IMAGE_TYPES:
                media_type = actual
            if (max(width, height) > limits.max_side or len(data) > limits.max_image_bytes
                    or actual not in MODEL_IMAGE_TYPES):
                data, media_type, (width, height) = _shrink(image, limits)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as error:
        log.info("a %s display item is not a readable image: %s", media_type, error)
        return None
    if len(data) > limits.max_image_bytes:
        return None
    return DisplayItem(media_type=media_type, data=base64.b64encode(data).decode("ascii"),
                       size=len(data), width=width, height=height)


def _shrink(image: Any, limits: RichLimits) -> tuple[bytes, str, tuple[int, int]]:
    copy = image.copy()
    copy.thumbnail((limits.max_side, limits.max_side))
    buffer = io.BytesIO()
    copy.save(buffer, format="PNG", optimize=True)
    if buffer.tell() <= limits.max_image_bytes:
        return buffer.getvalue(), "image/png", copy.size
    buffer = io.BytesIO()
    copy.convert("RGB").save(buffer, format="JPEG", quality=85)
    return buffer.getvalue(), "image/jpeg", copy.size


def _text_item(mime: str, value: Any, limits: RichLimits) -> DisplayItem | None:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if len(text) > limits.max_text_chars:
        if mime != "text/markdown":
            return None  # half an HTML table or an SVG is not worth showing
        text = text[:limits.max_text_chars] + "\n\n…"
    return DisplayItem(media_type=mime, text=text, size=len(text))


def _b64decode(value: Any, *, strict: bool = False) -> bytes:
    try:
        return base64.b64decode(str(value), validate=strict)
    except ValueError:  # binascii.Error is one
        return b""


def _call_repr(obj: Any, method: str) -> Any:
    if isinstance(obj, type):
        return None  # a class's _repr_html_ is an unbound function
    function = getattr(obj, method, None)
    if not callable(function):
        return None
    try:
        return function()
    except Exception as error:  # a broken repr shows as text, as IPython does
        log.info("%s.%s failed: %s", type(obj).__name__, method, error)
        return None


# --- matplotlib and plotly ----------------------------------------------------------------


def _matplotlib_figure(obj: Any) -> Any:
    if "matplotlib" not in sys.modules:
        return None
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    if isinstance(obj, Figure):
        return obj
    if isinstance(obj, SubFigure | Axes):
        return obj.get_figure(root=True)
    return None


def _figure_item(figure: Any, limits: RichLimits) -> DisplayItem:
    buffer = io.BytesIO()
    width, height = figure.get_size_inches() * figure.dpi
    pixels = width * height
    if pixels > limits.max_pixels:
        # Rendered at a lower resolution: plt.figure(figsize=(200, 200)) costs nothing to
        # make, but rendering it at its own dpi would take Agg 1.6 GB (it is downscaled
        # to max_side afterwards anyway).
        figure.savefig(buffer, format="png",
                       dpi=figure.dpi * (limits.max_pixels / pixels) ** 0.5 * 0.99)
    else:
        figure.savefig(buffer, format="png")
    item = image_item(buffer.getvalue(), "image/png", limits)
    if item is None:
        return DisplayItem(media_type="text/markdown", text="*(figure too large to show)*")
    item.name = "figure"
    return item


def _is_plotly_figure(obj: Any) -> bool:
    if "plotly" not in sys.modules:
        return False
    from plotly.basedatatypes import BaseFigure  # type: ignore[import-not-found]

    return isinstance(obj, BaseFigure)


def _plotly_items(figure: Any, limits: RichLimits) -> list[DisplayItem]:
    # plotly's HTML needs its JavaScript, which a sanitized card never runs; a PNG needs
    # plotly's image export (kaleido). Without it the card says so.
    try:
        png = figure.to_image(format="png")
    except Exception as error:
        log.info("plotly figure export failed: %s", error)
        return [DisplayItem(media_type="text/markdown",
                            text="*(plotly figure: install `kaleido` to show it as an image)*")]
    item = image_item(png, "image/png", limits)
    return [item] if item is not None else []


def _is_pil_image(obj: Any) -> bool:
    if "PIL" not in sys.modules:
        return False
    from PIL import Image

    return isinstance(obj, Image.Image)


class CapturedItems(list[DisplayItem]):
    """Display items caught while code ran, at most ``max_items`` of them; the rest are
    counted in ``left_out`` without being rendered (code that makes 1,000 figures would
    otherwise spend minutes and hundreds of MB turning them into PNGs nobody sees)."""

    left_out: int = 0


@contextlib.contextmanager
def capture_figures(limits: RichLimits = DEFAULT_LIMITS) -> Iterator[CapturedItems]:
    """Collect the matplotlib figures code creates inside the block, as images, and close
    them (a notebook's inline backend would otherwise show them again in the cell that
    started the session).

    ``plt.show()`` inside the block captures the open new figures at that moment instead
    of handing them to the backend. The backend itself is left alone: switching a
    notebook to Agg would stop the user's own plots from showing inline (headless, outside
    a notebook, matplotlib picks Agg on its own).
    """
    captured = CapturedItems()
    plt = sys.modules.get("matplotlib.pyplot")
    # Only figures made during the block; pyplot is not imported for code that never
    # plots (importing it is slow and picks a backend).
    before = set(plt.get_fignums()) if plt is not None else set()
    done: set[int] = set()

    def collect() -> None:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        for number in pyplot.get_fignums():
            if number in before or number in done:
                continue
            done.add(number)  # closed at the end, rendered or not
            if len(captured) >= limits.max_items:
                captured.left_out += 1
            else:
                captured.append(_figure_item(pyplot.figure(number), limits))

    def show(*args: Any, **kwargs: Any) -> None:
        collect()

    original_show = plt.show if plt is not None else None
    if plt is not None:
        plt.show = show  # type: ignore[attr-defined]
    try:
        yield captured
        collect()
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if plt is not None and original_show is not None:
            plt.show = original_show  # type: ignore[attr-defined]
        if pyplot is not None:
            for number in done:
                pyplot.close(number)
