"""A provider as another process rebuilds it (a batch run's Ray workers).

A vendor provider holds an SDK client — its connection pool, its locks, its key — and does
not pickle. What travels instead is what rebuilds it: :meth:`Provider.settings`, as a
stored session keeps them, and :meth:`Provider.rebuild_options`. What of these is secret
— the key, and the base URL and request options as configured when ``settings()`` leaves
something of them out (credentials in the URL, headers, secret-named options) — is set
apart in :attr:`ProviderRecipe.secrets`, for the sender to carry another way.
:func:`rebuild` makes the provider again from both: the same server, window, request
options, price and key, the base URL given explicitly (the owner's own configuration, not
a stored one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import Provider
from .factory import provider_from_settings

__all__ = ["ProviderRecipe", "rebuild", "recipe_of"]

_CONFIGURED = ("base_url", "request_options")
"""Settings a recipe's secrets may hold as configured, over the stored form."""


@dataclass(frozen=True)
class ProviderRecipe:
    """What rebuilds a provider: nothing in :attr:`settings` or :attr:`options` is secret."""

    settings: dict[str, Any]
    """:meth:`Provider.settings`."""
    options: dict[str, Any]
    """:meth:`Provider.rebuild_options` but the key."""
    secrets: dict[str, Any]
    """``api_key``, and ``base_url`` / ``request_options`` as configured where the stored
    form differs from them; JSON values."""


def recipe_of(provider: Provider) -> ProviderRecipe | None:
    """What rebuilds ``provider``; ``None`` when settings do not (see
    :meth:`Provider.rebuild_options`): it must travel pickled."""
    options = provider.rebuild_options()
    if options is None:
        return None
    options = dict(options)
    settings = provider.settings()
    secrets: dict[str, Any] = {}
    key = options.pop("api_key", None)
    if key is not None:
        secrets["api_key"] = key
    if settings.get("base_url") != provider.base_url:
        secrets["base_url"] = provider.base_url
    if settings.get("request_options") != dict(provider.request_options):
        secrets["request_options"] = dict(provider.request_options)
    return ProviderRecipe(settings=settings, options=options, secrets=secrets)


def rebuild(settings: Mapping[str, Any], options: Mapping[str, Any],
            secrets: Mapping[str, Any]) -> Provider:
    """The provider a :class:`ProviderRecipe`'s parts describe."""
    configured = {name: secrets[name] for name in _CONFIGURED if name in secrets}
    return provider_from_settings({**settings, **configured},
                                  {**options, "api_key": secrets.get("api_key")})
