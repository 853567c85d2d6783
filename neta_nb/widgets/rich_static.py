"""Rich outputs and attachments in the widgets' static forms (nbconvert, GitHub, a
notebook reopened without its kernel): a bracketed placeholder per item in text and
markdown, and in HTML a thumbnail when the image is small enough, else the placeholder.
Bounded: the static forms are written into the notebook three times over."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from ..labels import t

__all__ = ["THUMBNAIL_BUDGET", "attachment_placeholder", "output_html", "output_placeholder"]

THUMBNAIL_BUDGET = 60_000
"""Base64 characters of images one static HTML form may embed; later ones are
placeholders."""

_RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _size_text(item: Mapping[str, Any]) -> str:
    width, height = item.get("width") or 0, item.get("height") or 0
    return f"{width}×{height}" if width and height else str(item.get("media_type", ""))


def output_placeholder(item: Mapping[str, Any], lang: str) -> str:
    """``[image 640×480]``, ``[HTML table]``: one display item in words."""
    kind = str(item.get("media_type", ""))
    if kind.startswith("image/"):
        if item.get("data") is None and item.get("text") is None:
            return t("static_output_missing", lang)
        return t("static_output_image", lang, size=_size_text(item))
    if kind == "text/html":
        return t("static_output_html", lang)
    return t("static_output_markdown", lang)


def attachment_placeholder(attachment: Mapping[str, Any], lang: str) -> str:
    size = int(attachment.get("size") or 0)
    shown = (f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else
             f"{size / 1024:.0f} KB" if size >= 1024 else f"{size} B")
    return t("static_attachment", lang, name=str(attachment.get("name", "")), size=shown)


def output_html(item: Mapping[str, Any], lang: str, budget: list[int]) -> str:
    """A thumbnail ``<img>`` while ``budget[0]`` (characters left) allows, else the
    placeholder. Only raster ``data:`` images: nothing that runs or loads."""
    kind = str(item.get("media_type", ""))
    data = item.get("data")
    # Only base64 goes into the attribute: a stored item is data from a tool or a file,
    # and a quote in it would add attributes (onerror=…) to the tag.
    if (kind in _RASTER and isinstance(data, str) and len(data) <= budget[0]
            and _BASE64.fullmatch(data)):
        budget[0] -= len(data)
        return (f'<img alt="{html.escape(output_placeholder(item, lang))}" '
                f'src="data:{kind};base64,{data}" style="max-width:100%;max-height:320px">')
    return f"<div>{html.escape(output_placeholder(item, lang))}</div>"
