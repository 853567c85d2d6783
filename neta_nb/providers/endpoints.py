"""Where each supplier's requests go unless told otherwise, and which environment
variables give them their key.

A provider rebuilt from a stored session takes its ``base_url`` from the record and its
key from this process's environment. Whether the two may meet is decided from these
facts (:mod:`neta_nb.runtime.stored_endpoint`): an endpoint the reader configured — the
vendor's own, or the one in their ``*_BASE_URL`` variable — may get their key; another
may not.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from ..stored_urls import storable_url

__all__ = ["KEY_VARIABLES", "URL_VARIABLES", "VENDOR_URLS", "configured_endpoints",
           "environment_credentials", "requests_go_to", "same_endpoint"]

VENDOR_URLS = {"openai": "https://api.openai.com/v1",
               "anthropic": "https://api.anthropic.com",
               "deepseek": "https://api.deepseek.com"}
"""Each vendor's public API, where its SDK (or this package, for DeepSeek) sends requests
when no ``base_url`` is given."""

URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "openai-compatible": "OPENAI_BASE_URL",
                 "deepseek": "DEEPSEEK_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
"""The variable that sets a supplier's endpoint for this environment."""

KEY_VARIABLES = {"openai": ("OPENAI_API_KEY",),
                 "openai-compatible": ("OPENAI_API_KEY",),
                 # Never OPENAI_API_KEY: a DeepSeek provider without its own key is refused.
                 "deepseek": ("DEEPSEEK_API_KEY",),
                 # The Anthropic SDK sends ANTHROPIC_AUTH_TOKEN as a bearer token.
                 "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
"""The variables a provider of each supplier (or its SDK) takes a credential from when
none is given."""


def environment_credentials(supplier: str) -> tuple[str, ...]:
    """The names of the variables set in this environment that would give a provider of
    ``supplier`` built without ``api_key`` its credential."""
    return tuple(name for name in KEY_VARIABLES.get(supplier, ())
                 if os.environ.get(name, "").strip())


def configured_endpoints(supplier: str) -> tuple[str, ...]:
    """The endpoints this environment configures for ``supplier``: the vendor's own API
    and the URL in its ``*_BASE_URL`` variable, if set."""
    found = [VENDOR_URLS[supplier]] if supplier in VENDOR_URLS else []
    variable = URL_VARIABLES.get(supplier)
    value = os.environ.get(variable, "").strip() if variable else ""
    if value:
        found.append(value)
    return tuple(found)


def requests_go_to(supplier: str, base_url: str | None) -> tuple[str | None, bool]:
    """Where a provider of ``supplier`` with ``base_url`` sends its requests, as it may be
    shown (without credentials, see :func:`~neta_nb.stored_urls.storable_url`), and
    whether that is the vendor's own public API (``None``, ``False``: not known)."""
    vendor = VENDOR_URLS.get(supplier)
    url = base_url or vendor
    if url is None:
        return None, False
    return storable_url(url).url, vendor is not None and same_endpoint(url, vendor)


def same_endpoint(first: str, second: str) -> bool:
    """Whether two URLs name the same endpoint: compared as they are stored (without
    credentials, query or fragment), scheme and host case-insensitively, a trailing
    ``/`` ignored."""
    return _endpoint(first) == _endpoint(second)


def _endpoint(url: str) -> str:
    stored = storable_url(url.strip()).url or ""
    parts = urlsplit(stored)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"),
                       parts.query, ""))
