"""Files a user attaches to a prompt: ``session.run(prompt, attachments=[...])``.

An attachment may be given as a path, as ``(bytes, media_type)`` or
``(bytes, media_type, name)``, as a PIL image, or as an :class:`Attachment`. Each becomes a
content part of the user message:

* images (PNG, JPEG, GIF, WebP) → :class:`~neta_nb.messages.ImagePart`, downscaled to
  :attr:`AttachmentLimits.max_image_side`, for models with ``vision``;
* text files (csv, tsv, md, py, json, txt, and other ``text/*``) →
  :class:`~neta_nb.messages.FileTextPart`, the content under the file's name, for any
  model;
* PDFs → :class:`~neta_nb.messages.DocumentPart`, for models with ``pdf`` (Claude).

Anything else, anything the session's model cannot take, or anything over the limits is
refused with :class:`AttachmentError` *before* the turn starts: nothing is sent, nothing
is stored, the session stays ready for the next prompt.
"""

from __future__ import annotations

import base64
import io
import mimetypes
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...messages import DocumentPart, FileTextPart, ImagePart

__all__ = [
    "Attachment",
    "AttachmentError",
    "AttachmentLimits",
    "attachment_parts",
]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PDF_TYPE = "application/pdf"
# Files whose extension says "text" though the platform's table may not (or says
# something else: .py is text/x-python, .json application/json).
_TEXT_EXTENSIONS = {".csv": "text/csv", ".tsv": "text/tab-separated-values",
                    ".md": "text/markdown", ".markdown": "text/markdown",
                    ".py": "text/x-python", ".json": "application/json",
                    ".txt": "text/plain", ".log": "text/plain", ".yaml": "text/yaml",
                    ".yml": "text/yaml", ".toml": "text/plain", ".xml": "text/xml"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml"})


class AttachmentError(ValueError):
    """An attachment was refused before anything was sent; ``str()`` says which and why."""


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    """Bounds on what one prompt may carry (the chat view shows the same numbers)."""

    max_file_bytes: int = 10 * 1024 * 1024
    max_total_bytes: int = 20 * 1024 * 1024
    max_count: int = 10
    max_image_side: int = 1568
    """Longest image side sent; larger images are downscaled (Claude's own recommendation
    — larger ones it would scale down itself, at the same token cost)."""
    max_text_chars: int = 200_000
    max_image_pixels: int = 50_000_000
    """Larger images are refused before they are decoded (50 megapixels of RGBA are
    200 MB of memory)."""


DEFAULT_ATTACHMENT_LIMITS = AttachmentLimits()


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file for the model: its bytes, media type and name."""

    data: bytes
    media_type: str
    name: str = "attachment"

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *,
                  max_bytes: int | None = None) -> Attachment:
        """The file at ``path``; one larger than ``max_bytes`` is refused from its size
        alone (a 4 GB file is never read into memory to find out)."""
        file = Path(path).expanduser()
        shown = _readable_name(str(path))
        try:
            # One stat of the target: a FIFO or a device is never opened (reading a FIFO
            # blocks until someone writes, /dev/zero never ends).
            info = file.stat()
        except (FileNotFoundError, NotADirectoryError):
            raise AttachmentError(f"attachment {shown!r}: no such file") from None
        except OSError as error:  # a symlink loop, no permission
            raise AttachmentError(f"attachment {shown!r}: {error.strerror or error}") from None
        if stat.S_ISDIR(info.st_mode):
            raise AttachmentError(f"attachment {shown!r} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise AttachmentError(f"attachment {shown!r} is not a regular file")
        name = _readable_name(file.name)
        if max_bytes is not None and info.st_size > max_bytes:
            raise AttachmentError(f"{name} is {_size(info.st_size)}: at most "
                                  f"{_size(max_bytes)} per file")
        try:
            data = file.read_bytes()
        except OSError as error:
            raise AttachmentError(f"attachment {shown!r}: {error.strerror or error}") from None
        return cls(data=data, media_type=guess_media_type(name), name=name)

    @classmethod
    def coerce(cls, item: Any, *, max_bytes: int | None = None,
               max_pixels: int | None = None) -> Attachment:
        """Any of the accepted forms (see the module docstring) as an attachment."""
        if isinstance(item, Attachment):
            return item
        if isinstance(item, str | os.PathLike):
            return cls.from_path(item, max_bytes=max_bytes)
        if isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[0], bytes):
            media_type = str(item[1])
            name = (_readable_name(str(item[2])) if len(item) == 3
                    else _default_name(media_type))
            return cls(data=item[0], media_type=media_type, name=name)
        if _is_pil_image(item):
            width, height = item.size
            if max_pixels is not None and width * height > max_pixels:
                # Refused before encoding: a PNG of 400 megapixels takes minutes to write.
                raise AttachmentError(f"a {width}×{height} image is {width * height:,} "
                                      f"pixels: at most {max_pixels:,}")
            buffer = io.BytesIO()
            item.save(buffer, format="PNG")
            name = Path(getattr(item, "filename", "") or "image.png").with_suffix(".png").name
            return cls(data=buffer.getvalue(), media_type="image/png", name=name)
        raise AttachmentError(
            f"cannot attach a {type(item).__name__}: give a path, (bytes, media_type), "
            "a PIL image or an Attachment")


def guess_media_type(name: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix in _TEXT_EXTENSIONS:
        return _TEXT_EXTENSIONS[suffix]
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def attachment_parts(items: Iterable[Any], *, capabilities: frozenset[str], model: str,
                     limits: AttachmentLimits = DEFAULT_ATTACHMENT_LIMITS,
                     ) -> list[ImagePart | DocumentPart | FileTextPart]:
    """The content parts for ``items``; raises :class:`AttachmentError` for the first one
    that cannot go to ``model`` (whose ``capabilities`` are given)."""
    given = list(items)
    if len(given) > limits.max_count:  # before any file is read
        raise AttachmentError(f"{len(given)} attachments: at most "
                              f"{limits.max_count} per message")
    attachments = [Attachment.coerce(item, max_bytes=limits.max_file_bytes,
                                     max_pixels=limits.max_image_pixels) for item in given]
    total = sum(len(a.data) for a in attachments)
    if total > limits.max_total_bytes:
        raise AttachmentError(f"attachments total {_size(total)}: at most "
                              f"{_size(limits.max_total_bytes)} per message")
    return [_part(a, capabilities, model, limits) for a in attachments]


def _part(attachment: Attachment, capabilities: frozenset[str], model: str,
          limits: AttachmentLimits) -> ImagePart | DocumentPart | FileTextPart:
    name = _readable_name(attachment.name)  # also for names that came over the wire
    media_type = attachment.media_type.split(";")[0].strip().lower()
    if len(attachment.data) > limits.max_file_bytes:
        raise AttachmentError(f"{name} is {_size(len(attachment.data))}: at most "
                              f"{_size(limits.max_file_bytes)} per file")
    if media_type in IMAGE_TYPES:
        if "vision" not in capabilities:
            raise AttachmentError(f"{name}: the model {model} does not accept images")
        return _image_part(replace(attachment, name=name), media_type, limits)
    if media_type == PDF_TYPE:
        if "pdf" not in capabilities:
            raise AttachmentError(f"{name}: the model {model} does not accept PDF documents")
        return DocumentPart(media_type=PDF_TYPE, name=name, size=len(attachment.data),
                            data=base64.b64encode(attachment.data).decode("ascii"))
    if media_type.startswith("text/") or media_type in _TEXT_TYPES:
        try:
            text = attachment.data.decode("utf-8")
        except UnicodeDecodeError:
            raise AttachmentError(f"{name} is not UTF-8 text") from None
        if len(text) > limits.max_text_chars:
            raise AttachmentError(f"{name} has {len(text):,} characters: at most "
                                  f"{limits.max_text_chars:,} per text file")
        return FileTextPart(name=name, media_type=media_type, text=text,
                            size=len(attachment.data))
    raise AttachmentError(f"{name}: {media_type} files cannot be sent to a model "
                          "(images, PDFs and text files can)")


def _image_part(attachment: Attachment, media_type: str,
                limits: AttachmentLimits) -> ImagePart:
    from PIL import Image, UnidentifiedImageError

    data = attachment.data
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            # Checked from the header, before decoding: a few KB of PNG can decode to
            # gigabytes (Pillow's own bomb check only starts at 89 megapixels, and warns).
            if width * height > limits.max_image_pixels:
                raise AttachmentError(
                    f"{attachment.name} is {width}×{height} = {width * height:,} pixels: "
                    f"at most {limits.max_image_pixels:,}")
            image.load()
            # The bytes decide, not the declared type: an API rejects a JPEG sent as
            # image/png, and a BMP or TIFF it does not take at all is converted.
            actual = Image.MIME.get(image.format or "", "")
            if actual in IMAGE_TYPES:
                media_type = actual
            if max(width, height) > limits.max_image_side or actual not in IMAGE_TYPES:
                copy = image.copy()
                copy.thumbnail((limits.max_image_side, limits.max_image_side))
                buffer = io.BytesIO()
                keep_png = (media_type == "image/png" or actual not in IMAGE_TYPES
                            or copy.mode in ("RGBA", "LA", "P"))
                if keep_png:
                    copy.save(buffer, format="PNG", optimize=True)
                else:
                    copy.convert("RGB").save(buffer, format="JPEG", quality=90)
                data, media_type = buffer.getvalue(), ("image/png" if keep_png
                                                       else "image/jpeg")
                width, height = copy.size
    except Image.DecompressionBombError:  # raised by open() itself, past 2× Pillow's limit
        raise AttachmentError(
            f"{attachment.name} is over {2 * (Image.MAX_IMAGE_PIXELS or 0):,} pixels: "
            f"at most {limits.max_image_pixels:,}") from None
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise AttachmentError(f"{attachment.name} is not a readable image ({error})") from None
    return ImagePart(media_type=media_type, name=attachment.name, size=len(data),
                     width=width, height=height,
                     data=base64.b64encode(data).decode("ascii"))


def _readable_name(name: str) -> str:
    """``name`` as valid UTF-8: a file name of other bytes (Latin-1 on a UTF-8 system)
    comes from the OS with lone surrogates, and JSON from a page may carry them
    (``"\\ud800"``); no UTF-8 encoder — the store's, the SDK's, the widget's — accepts
    them."""
    return _SURROGATE.sub("\ufffd", name)


def _default_name(media_type: str) -> str:
    extension = mimetypes.guess_extension(media_type) or ""
    return f"attachment{extension}"


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MB"
    return f"{count / 1024:.0f} KB" if count >= 1024 else f"{count} B"


def _is_pil_image(item: Any) -> bool:
    import sys

    if "PIL" not in sys.modules:
        return False
    from PIL import Image

    return isinstance(item, Image.Image)
