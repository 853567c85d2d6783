"""Whether a provider rebuilt from a stored record may talk to the server the record names.

A stored agent keeps its provider's ``base_url`` (never its key): a resume, a replay or a
batch run's resume rebuilds the provider from it with the key of whoever reads the store,
from their environment. The record may be another user's — a shared PostgreSQL store,
a file someone handed over — so its URL alone must not decide where that key goes.

The rule, for a provider rebuilt from stored settings (:attr:`Agent.provider_settings
<neta_nb.runtime.agent.Agent.provider_settings>` read by ``Agent.from_record``):

* no stored URL, the vendor's own API, or the URL in the reader's own ``*_BASE_URL``
  variable (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``DEEPSEEK_BASE_URL``): used;
* any other URL, when a credential would come from the reader's environment
  (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``,
  ``DEEPSEEK_API_KEY``): refused with :class:`StoredEndpointError` — whoever wrote the
  record, since a store's rows say who wrote them but do not prove it;
* any other URL, when no credential would be sent (a local server such as llama.cpp,
  given no key): used if the record is the reader's own, refused if another user wrote
  it (or it names no writer) — their server would get the reader's prompts and tool
  results.

Settings the reader gave in code, and a provider given to the entry point
(``AgentSession.resume(..., provider=...)``, ``replay(..., model=...)``, an ``agent=``),
are the reader's own choice and never checked.

A session's stored MCP servers (a command to start in the reader's kernel, a URL to send
the reader's tool calls to) come back only from the reader's own record
(:func:`admitted_mcp_servers`); from another user's, or one that names no writer, each is
left out with a message naming its command or URL and how to add it on purpose — unless
the reader's catalog already has a server of that name, which is kept as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from ..providers.base import Provider
from ..providers.endpoints import (
    URL_VARIABLES,
    configured_endpoints,
    environment_credentials,
    same_endpoint,
)
from ..store.process_owner import current_user

__all__ = ["StoredEndpointError", "StoredOrigin", "admitted_mcp_servers",
           "check_stored_endpoint"]


@dataclass(frozen=True)
class StoredOrigin:
    """Where an agent's stored definition was read from: ``what`` names it for a message
    (``session 'abc123'``, ``batch run 'nightly'``), ``user`` is who the store says wrote
    it (``None``: it does not say)."""

    what: str
    user: str | None


class StoredEndpointError(PermissionError):
    """A stored provider names a server the reader did not configure: rebuilding it would
    send the reader's key (or prompts) there. The message names the URL and how to use
    it on purpose — by giving the provider explicitly."""


def check_stored_endpoint(provider: Provider, origin: StoredOrigin | None,
                          agent_name: str) -> None:
    """Raise :class:`StoredEndpointError` unless ``provider``, rebuilt from settings read
    from ``origin`` without a key given, may use its ``base_url`` (see the module's rule).
    ``origin`` ``None``: settings the reader gave, nothing to check."""
    url = provider.base_url
    if origin is None or url is None:
        return
    supplier = provider.supplier
    if any(same_endpoint(url, known) for known in configured_endpoints(supplier)):
        return
    credentials = environment_credentials(supplier)
    mine = origin.user is not None and origin.user == current_user()
    if not credentials and mine:
        return
    writer = f"written by {origin.user}" if origin.user is not None else "its writer unknown"
    if credentials:
        why = (f"{' / '.join(credentials)} from your environment is not sent to a server "
               f"you did not configure")
    else:
        why = "a server another user stored is not sent your prompts and tool results"
    variable = URL_VARIABLES.get(supplier)
    also = f", or set {variable} to it" if variable else ""
    spec = f"{provider.model_id!r}, base_url={url!r}"
    raise StoredEndpointError(
        f"{origin.what} ({writer}): agent {agent_name!r} has its provider "
        f"({provider.model_id}) stored with base_url {url!r}, which is not an endpoint "
        f"you configured; {why}. To use that server on purpose, give the provider "
        f"yourself: AgentSession.resume(..., provider=create_provider({spec})), "
        f"replay(..., model=create_provider({spec})), or an agent=... whose model is that "
        f"provider (BatchRun.resume, a sub-agent){also}. To use your own endpoint "
        f"instead: provider=create_provider({provider.model_id!r}) to a resume, "
        f"model={provider.model_id!r} to a replay")


def admitted_mcp_servers(specs: Iterable[Mapping[str, object]], origin: StoredOrigin,
                         present: Collection[str]) -> tuple[list[Mapping[str, object]],
                                                            list[str]]:
    """The stored MCP server specs a resume or replay may bring back, and why each other
    one was left out. ``present``: the names of the servers already in the reader's
    catalog (a restore keeps those as they are, so they are always admitted). Another
    user's server (or one from a record naming no writer) is left out: its command would
    run in the reader's kernel, its URL would get the reader's tool calls."""
    specs = list(specs)
    if origin.user is not None and origin.user == current_user():
        return specs, []
    admitted: list[Mapping[str, object]] = []
    problems: list[str] = []
    writer = f"written by {origin.user}" if origin.user is not None else "its writer unknown"
    for spec in specs:
        name = spec.get("name")
        if isinstance(name, str) and name in present:
            admitted.append(spec)
            continue
        command, url = spec.get("command"), spec.get("url")
        if isinstance(command, str) and command:
            args = spec.get("args") if isinstance(spec.get("args"), list) else []
            what = (f"it would run the command {command!r} with arguments {args!r} in "
                    f"this kernel")
            how = f"command={command!r}, args=[...]"
        else:
            what = f"it would send your tool calls to {url!r}"
            how = f"url={url!r}"
        problems.append(
            f"{origin.what} ({writer}): MCP server {name!r} not restored: {what}, and a "
            f"server another user stored is not started for you. To use it on purpose, "
            f"add it to your catalog first — catalog.add_mcp_server({name!r}, {how}) — "
            f"and pass catalog= to the resume or replay; its tools are missing until then")
    return admitted, problems
