"""The widget code travels once per kernel: one shared model holds the bundle, and every
widget carries only a small loader that names it.

Measured on the page (issue 17): with the whole bundle (components, markdown, sanitizer,
some 190 KB of JS and CSS) as every widget's ``_esm``/``_css``, each widget's ``comm_open``
carried a copy — three widgets in a notebook sent three, a page reload resent one per
model, and a notebook saved with widget state stored one per model.

Now :class:`WidgetBundle` is a plain ``@jupyter-widgets/base`` model (every widget manager
has it: JupyterLab, Notebook 7, VS Code, Colab, the HTML manager of an export) whose state
is the code, the styles and their hash. There is one per kernel (:func:`shared_bundle`).
The code and styles travel gzip-compressed, as binary buffers (260 KB of text become
73 KB on the wire, and base64 in saved widget state); the loader inflates them with the
browser's own ``DecompressionStream``.
Each neta_nb widget's ``_esm`` is the loader (``neta_nb/static/loader.js``, built from
``js/src/loader.ts``) and its ``neta_nb.widgets.bundle`` trait is a reference to that model
(``IPY_MODEL_<id>``, which saved widget state keeps and the manager resolves). The loader
evaluates the code once per page, keyed by the hash, and every widget of every notebook of
the page reuses that module; no view ever fetches anything from a server.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from pathlib import Path

import ipywidgets  # type: ignore[import-untyped]
import traitlets

__all__ = ["BUNDLE_FILE", "LOADER_FILE", "MISSING_BUNDLE_ESM", "STATIC_DIR", "STYLES_FILE",
           "WidgetBundle", "loader_source", "shared_bundle"]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
BUNDLE_FILE = STATIC_DIR / "widgets.js"
STYLES_FILE = STATIC_DIR / "widgets.css"
LOADER_FILE = STATIC_DIR / "loader.js"

# Shown in place of a card when the package was installed without building its JS
# (the build hook normally guarantees the bundle exists).
MISSING_BUNDLE_ESM = """
export default { render({ el }) {
  el.textContent = "neta_nb: the widget bundle is missing. Reinstall with Node.js and npm "
    + "available (pip install -e .), or run `npm ci && npm run build` in js/.";
} };
"""


def _read(path: Path, missing: str) -> str:
    # An empty file (a build interrupted while writing) is as missing as no file: an empty
    # module would fail in the page with an error that names nothing to do.
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return text if text.strip() else missing


def loader_source() -> str:
    """The ``_esm`` of every neta_nb widget: the loader, or a module that says the build
    is missing."""
    return _read(LOADER_FILE, MISSING_BUNDLE_ESM)


class WidgetBundle(ipywidgets.Widget):  # type: ignore[misc]
    """The shared code of the neta_nb widgets, as the state of one model with no view.

    ``hash`` names the code and styles (the loader caches the evaluated module under it,
    so two kernels with the same package share one module on a page, and two versions of
    the package on one page do not mix)."""

    # The base model (``WidgetModel`` of ``@jupyter-widgets/base``) as ipywidgets.Widget
    # declares it: every manager can hold it without loading any module.

    code = traitlets.Bytes(b"", help="The widgets' ES module (neta_nb/static/widgets.js), "
                           "gzip-compressed.").tag(sync=True)
    css = traitlets.Bytes(b"", help="Their stylesheet (neta_nb/static/widgets.css), "
                          "gzip-compressed.").tag(sync=True)
    hash = traitlets.Unicode("", help="sha256 of code and css: the page caches by it."
                             ).tag(sync=True)

    @classmethod
    def from_static_files(cls) -> WidgetBundle:
        code = _read(BUNDLE_FILE, MISSING_BUNDLE_ESM)
        css = _read(STYLES_FILE, "")
        digest = hashlib.sha256(f"{len(code)}:{code}{css}".encode()).hexdigest()[:16]
        return cls(code=_compressed(code), css=_compressed(css), hash=digest)


def _compressed(text: str) -> bytes:
    # mtime=0: the same files give the same bytes (saved widget state compares equal).
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


_shared: WidgetBundle | None = None
_shared_lock = threading.Lock()


def shared_bundle() -> WidgetBundle:
    """The kernel's one :class:`WidgetBundle`, opened on first use and opened again if it
    was closed (``Widget.close_all()``), so a widget made afterwards still has its code."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.comm is None:
            _shared = WidgetBundle.from_static_files()
        return _shared
