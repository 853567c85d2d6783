"""What of a connection's settings may be stored: the server's address and harmless
options, never a credential in them.

A URL that reaches a model or an MCP server can carry secrets in three places: the
``user:password@`` part, query parameters (``?api-key=…`` of Azure-style gateways, a
proxy's ``?token=…``, a signed URL's ``?sig=…``) and the ``#fragment`` (never sent to a
server, but ``#access_token=…`` is a known pattern). :func:`storable_url` keeps the
address and only the query parameters known to be harmless
(:data:`SAFE_QUERY_PARAMETERS`) and names what it left out — by name, never by value —
so that a resume can say what must be given again (:func:`describe_withheld`).

A provider's ``request_options`` are merged into every request body, and the SDKs take
headers and query parameters there too (``extra_headers``, ``extra_query``):
:func:`storable_options` keeps the options and drops headers, query parameters other
than the harmless ones, and any option whose name says it holds a secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["SAFE_QUERY_PARAMETERS", "USERINFO", "StorableUrl", "describe_withheld",
           "storable_options", "storable_url", "withheld_names"]

SAFE_QUERY_PARAMETERS = frozenset({"api-version", "api_version"})
"""Query parameters kept when a URL is stored (compared case-insensitively): versions,
which a server needs and which are never secret. Every other parameter is dropped — an
allow-list, because a gateway may name its key anything."""

USERINFO = "user:password"
"""How :attr:`StorableUrl.withheld` names a dropped ``user:password@`` part."""
_FRAGMENT = "#fragment"
_UNNAMED = "a query value without a name"

# A parameter name is only repeated in a note if it reads as a name: letters joined by
# '-', '_' or '.', at most 32 of them, and not the start of a known kind of key. A bare
# token (``?sk-abc123…``, with or without a padding '='), which has digits or such a
# prefix, is not repeated.
_PARAMETER_NAME = re.compile(r"^[A-Za-z][A-Za-z_.\-]{0,31}$")
_KEY_PREFIXES = ("sk-", "sk_", "pk-", "pk_", "ghp_", "gho_", "github_pat_", "xox", "eyj",
                 "akia", "bearer")
_HEADER_OPTIONS = frozenset({"extra_headers", "headers", "default_headers"})
_QUERY_OPTIONS = frozenset({"extra_query", "query", "default_query", "params"})
_SECRET_WORDS = re.compile(r"key|token|secret|passw|auth|signature|credential|cookie|sig$",
                           re.IGNORECASE)


@dataclass(frozen=True)
class StorableUrl:
    """A URL as it may be stored, and what was left out of it."""

    url: str | None
    withheld: tuple[str, ...] = ()
    """What was left out, by name: :data:`USERINFO`, the names of dropped query
    parameters, ``#fragment``."""


def storable_url(url: str | None, noted: Iterable[str] = ()) -> StorableUrl:
    """``url`` without credentials, query parameters other than
    :data:`SAFE_QUERY_PARAMETERS`, or a fragment. ``noted``: what was left out when the
    URL was stored before — a URL rebuilt from a stored one still lacks it, and a later
    resume must still say so."""
    withheld = list(noted)
    if url is None:
        return StorableUrl(None, _unique(withheld))
    parts = urlsplit(url)
    _userinfo, at, netloc = parts.netloc.rpartition("@")
    if at:
        withheld.append(USERINFO)
    kept: list[str] = []
    for item in parts.query.split("&") if parts.query else ():
        name, equals, _value = item.partition("=")
        name = unquote_plus(name).strip()
        if equals and name.lower() in SAFE_QUERY_PARAMETERS:
            kept.append(item)  # as written: its encoding is the server's business
        elif item:
            withheld.append(name if equals and _reads_as_name(name) else _UNNAMED)
    if parts.fragment:
        withheld.append(_FRAGMENT)
    stored = urlunsplit(parts._replace(netloc=netloc, query="&".join(kept), fragment=""))
    return StorableUrl(stored, _unique(withheld))


def storable_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``request_options`` as they may be stored, and the names (paths) of what was left
    out: headers, query parameters other than :data:`SAFE_QUERY_PARAMETERS`, options named
    like a secret (``api_key``, ``token``, ``signature``…) at any depth."""
    withheld: list[str] = []
    return _storable_mapping(options, "", withheld), _unique(withheld)


def _storable_mapping(options: Mapping[str, Any], prefix: str,
                      withheld: list[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key)
        path = f"{prefix}{name}" if _reads_as_name(name) else f"{prefix}(an unnamed option)"
        lowered = name.lower()
        if lowered in _HEADER_OPTIONS or _SECRET_WORDS.search(name):
            withheld.append(path)
        elif lowered in _QUERY_OPTIONS and isinstance(value, Mapping):
            safe = {k: v for k, v in value.items() if str(k).lower() in SAFE_QUERY_PARAMETERS}
            withheld.extend(f"{path}.{k}" if _reads_as_name(str(k)) else _UNNAMED
                            for k in value if k not in safe)
            if safe:
                kept[key] = safe
        elif isinstance(value, Mapping):
            kept[key] = _storable_mapping(value, f"{path}.", withheld)
        else:
            kept[key] = value
    return kept


def _reads_as_name(name: str) -> bool:
    return bool(_PARAMETER_NAME.match(name)) and not name.lower().startswith(_KEY_PREFIXES)


def withheld_names(value: object) -> tuple[str, ...]:
    """A stored note of what a URL was stored without, read as a damaged record may
    hold it (anything but a list of strings counts as nothing)."""
    if not isinstance(value, list):
        return ()
    return _unique(item for item in value if isinstance(item, str) and item)


def describe_withheld(withheld: Iterable[str]) -> str:
    """``user:password and the query parameters api-key and sig`` — for a message that
    says what must be given again."""
    names = list(withheld)
    parameters = [name for name in names if name not in (USERINFO, _UNNAMED, _FRAGMENT)]
    noun = "query parameter" if len(parameters) == 1 else "query parameters"
    pieces = [USERINFO if USERINFO in names else "",
              f"the {noun} {_joined(parameters)}" if parameters else "",
              _UNNAMED if _UNNAMED in names else "",
              f"the {_FRAGMENT}" if _FRAGMENT in names else ""]
    return _joined([piece for piece in pieces if piece])


def _joined(words: list[str]) -> str:
    if len(words) < 2:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))
