"""AcpConnection: one outside agent's process and the Agent Client Protocol spoken with it
(the ``agent-client-protocol`` SDK, extra ``neta-nb[acp]``) — start and initialize it,
open or load a session, send a prompt, cancel, end it. What the agent asks of the client
(its session updates, its permission requests) goes to a :class:`Listener`.

The client offers no file system and no terminal: the agent reads and writes files and
runs commands itself, in its working directory, so what the session shows is what
happened there.

The agent's ``session/update`` notifications do not go through the SDK: the SDK handles
each message as a task of its own, with a telemetry span, its router and an update
tracker around it — some 40 µs a chunk, against 1 µs for a native model's delta
(benchmarks/acp_stream.py). :class:`_Updates` reads the agent's output first and hands
the updates to the listener itself, in the order they came (a text chunk without even a
model of it); requests and responses go on to the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import json.scanner
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from ...encodable import encodable
from ...providers.base import ProviderError
from .controls import AgentMode
from .process import STDOUT_LINE_LIMIT, AgentProcess, AgentStartError
from .servers import McpServerSpec

try:
    import acp
    from acp.schema import (
        AllowedOutcome,
        ClientCapabilities,
        DeniedOutcome,
        EnvVariable,
        HttpHeader,
        HttpMcpServer,
        ImageContentBlock,
        Implementation,
        McpServerStdio,
        PermissionOption,
        PromptResponse,
        RequestPermissionResponse,
        SessionNotification,
        TextContentBlock,
        ToolCallUpdate,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("Outside agents (AcpAgent) need the Agent Client Protocol SDK: "
                      "pip install 'neta-nb[acp]'") from error

__all__ = ["AcpConnection", "Listener", "cancelled_outcome", "chosen_outcome"]

log = logging.getLogger(__name__)

_START_TIMEOUT = 60.0
"""Seconds the agent gets to start and answer ``initialize`` (a first ``npx`` run may
install it)."""
_EXIT_WAIT = 2.0
"""Seconds a closed connection waits for the process's exit status."""


class Listener(Protocol):
    """Who hears what the agent sends."""

    def on_update(self, session_id: str, update: Any) -> None:
        """A ``session/update`` notification's update (the SDK's model of it)."""

    def on_chunk(self, session_id: str, text: str, *, thinking: bool) -> None:
        """An ``agent_message_chunk`` (or, ``thinking``, ``agent_thought_chunk``) of
        text."""

    async def on_permission(self, session_id: str, tool_call: ToolCallUpdate,
                            options: list[PermissionOption]) -> RequestPermissionResponse:
        """A ``session/request_permission`` request; its answer."""
        ...


def cancelled_outcome() -> RequestPermissionResponse:
    """The answer to a permission request that will not be decided (the turn stopped)."""
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def chosen_outcome(option_id: str) -> RequestPermissionResponse:
    """The answer to a permission request: the agent's option ``option_id``."""
    return RequestPermissionResponse(
        outcome=AllowedOutcome(option_id=option_id, outcome="selected"))


_CHUNKS = {"agent_message_chunk": False, "agent_thought_chunk": True}
"""The updates that stream text, and whether they are thinking."""


_decode_at = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
"""The standard library's C scanner: one JSON value from a ``str`` at an index, without
``json.loads``' wrappers (an encoding guess on bytes, two calls) — a third of a chunk's
CPU went there."""
_scan_string: Callable[[str, int], tuple[str, int]] = (
    json.decoder.scanstring)  # type: ignore[attr-defined]
"""The standard library's C reader of one JSON string (from after its opening quote)."""

_ChunkForm = tuple[str, str, str, bool]
"""How an agent writes a text chunk's line: all before the text's first character (the
notification's method, its session, the update's kind, the content's type and the key
``"text"``, in the agent's order and spacing), and the closing braces after the text —
with the session id and whether it is thinking. A line that starts and ends so is that
notification, whatever its text (escapes included), so only the text is read: the rest of
the line is the bytes already read whole and checked once. Most of a chunk's decoding
went to the objects around the text."""
_CHUNK_FORMS = 4
"""The most forms kept (answer and thinking, in a session or two)."""
_READ_SIZE = 1 << 16
"""Bytes read from the agent at once: its lines are split here, not one read each."""


class _Updates:
    """The agent's output, read before the SDK: see the module."""

    def __init__(self, source: asyncio.StreamReader, listener: Listener) -> None:
        self._source = source
        self._listener = listener
        self.sdk_reader = asyncio.StreamReader(limit=STDOUT_LINE_LIMIT)
        """What the SDK reads: every line but the updates."""
        self._chunk_forms: list[_ChunkForm] = []

    def _learn_form(self, line: str, session_id: str, value: str, thinking: bool) -> None:
        """Keep the form of a text chunk's line (decoded whole, ``value`` its text) when
        its text is its last field: what comes before the text, and the closing braces
        after it."""
        if len(self._chunk_forms) >= _CHUNK_FORMS:
            return
        key = line.rfind('"text"')
        if key < 0:
            return
        start = key + len('"text"')
        while start < len(line) and line[start] in " \t:":
            start += 1
        if start >= len(line) or line[start] != '"':
            return
        try:
            found, end = _scan_string(line, start + 1)
        except ValueError:
            return
        suffix = line[end:]
        if found == value and suffix.strip(" \t\r\n") and not suffix.strip("} \t\r\n"):
            self._chunk_forms.append((line[:start + 1], suffix, session_id, thinking))

    async def pump(self) -> None:
        # The start of a line not yet ended, in the pieces it came in: joined once when
        # its end comes (joined at each read, a line of megabytes read in thousands of
        # blocks was copied over again each time).
        pending: list[bytes] = []
        size = 0
        try:
            while True:
                block = await self._source.read(_READ_SIZE)
                if not block:
                    if pending:
                        self._line(_joined(pending))
                    return
                end = block.rfind(b"\n")
                if end >= 0:
                    ended = block[:end]
                    if pending:
                        ended = _joined([*pending, ended])
                    for line in ended.split(b"\n"):
                        self._line(line + b"\n")
                    pending, size = [], 0
                    block = block[end + 1:]
                if block:
                    pending.append(block)
                    size += len(block)
                if size > STDOUT_LINE_LIMIT:
                    raise ValueError(f"a line of over {STDOUT_LINE_LIMIT} bytes")
        except (ValueError, ConnectionError) as error:  # a line over the limit; a broken pipe
            log.warning("reading the agent's output failed: %s", error)
        finally:
            self.sdk_reader.feed_eof()

    def _line(self, line: bytes) -> None:
        if b'"session/update"' not in line or not self._handled(line):
            self.sdk_reader.feed_data(line)

    def _handled(self, line: bytes) -> bool:
        """Hand ``line`` to the listener if it is an update; whether it was one."""
        try:
            text = line.decode()
        except UnicodeDecodeError:
            return False
        for prefix, suffix, session_id, thinking in self._chunk_forms:
            # A text chunk written as one before it (see _ChunkForm): only its text is read.
            if text.startswith(prefix) and text.endswith(suffix):
                try:
                    value, end = _scan_string(text, len(prefix))
                except ValueError:
                    break
                if end == len(text) - len(suffix):
                    self._listener.on_chunk(session_id, value, thinking=thinking)
                    return True
                break
        try:
            message, end = _decode_at(text, 0)
        except (StopIteration, ValueError, RecursionError):
            return False
        if end != len(text) and not text[end:].isspace():
            return False
        chunk = _text_chunk(message)
        if chunk is not None:  # most lines: a streamed chunk of text, read directly
            session_id, value, thinking = chunk
            self._learn_form(text, session_id, value, thinking)
            self._listener.on_chunk(session_id, value, thinking=thinking)
            return True
        if not isinstance(message, dict) or message.get("method") != "session/update" \
                or "id" in message:
            return False
        params = message.get("params")
        if not isinstance(params, dict):
            return True  # a broken notification: nobody answers a notification
        try:
            notification = SessionNotification.model_validate(params)
            self._listener.on_update(notification.session_id, notification.update)
        except Exception:  # a listener's bug or an update the SDK cannot read: not fatal
            log.exception("an update from the agent could not be shown")
        return True


def _joined(pieces: list[bytes]) -> bytes:
    """A line from the pieces it came in (once per line: see ``_Updates.pump``)."""
    return b"".join(pieces)


def _text_chunk(message: Any) -> tuple[str, str, bool] | None:
    """``(session id, text, thinking)`` of an ``agent_message_chunk`` or
    ``agent_thought_chunk`` notification of text; ``None`` for anything else."""
    try:
        params = message["params"]
        update = params["update"]
        content = update["content"]
        thinking = _CHUNKS[update["sessionUpdate"]]
        text = content["text"]
        if content["type"] != "text" or type(text) is not str \
                or message["method"] != "session/update" or "id" in message:
            return None
        return str(params["sessionId"]), text, thinking
    except (KeyError, TypeError, IndexError):
        return None


class _Client:
    """The client side the SDK calls: updates and permission requests to the listener;
    nothing else is offered (see the module)."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self._listener.on_update(session_id, update)

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[PermissionOption],
                                 **_: Any) -> RequestPermissionResponse:
        return await self._listener.on_permission(session_id, tool_call, options)

    def on_connect(self, conn: Any) -> None:
        return None


class AcpConnection:
    """A started agent (see the module). ``agent_name`` names it in errors."""

    def __init__(self, agent_name: str, command: Sequence[str], *,
                 env: Mapping[str, str | None] | None, cwd: Path, listener: Listener,
                 mcp_servers: Sequence[McpServerSpec] = ()) -> None:
        self.agent_name = agent_name
        self._mcp_servers = list(mcp_servers)
        self.left_out: list[str] = []
        """Why MCP servers were not given to the agent (it cannot reach them)."""
        self._http = False
        self.process = AgentProcess(command, env=env, cwd=cwd)
        self._listener = listener
        self._conn: Any = None
        self._pump: asyncio.Task[None] | None = None
        self.can_load = False
        """The agent offers ``session/load`` (a session continues in a new process)."""
        self.takes_images = False
        """The agent takes images in a prompt (its ``promptCapabilities.image``)."""
        self.can_fork = False
        """The agent offers ``session/fork`` (a new session that starts with another's
        history)."""
        self.modes: list[AgentMode] = []
        """The session modes the agent offered for the latest session."""
        self.current_mode: str | None = None
        """The mode the latest session is in, as the agent answered (or was set)."""

    @property
    def alive(self) -> bool:
        return self._conn is not None and self.process.running

    async def open(self) -> None:
        """Start the agent and initialize the protocol."""
        try:
            stdin, stdout = await self.process.start()
        except AgentStartError as error:
            raise ProviderError(f"{self.agent_name}: {error}") from error
        updates = _Updates(stdout, self._listener)
        self._pump = asyncio.get_running_loop().create_task(
            updates.pump(), name=f"neta_nb agent output {self.process.pid}")
        # The SDK answers "method not found" for what the client does not offer (files,
        # terminals): _Client has only the methods it answers.
        self._conn = acp.connect_to_agent(cast("acp.Client", _Client(self._listener)), stdin,
                                          updates.sdk_reader)
        init = await self._call(self._conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="neta-nb", version="0.1")), _START_TIMEOUT)
        capabilities = init.agent_capabilities
        self.can_load = bool(capabilities is not None and capabilities.load_session)
        prompts = capabilities.prompt_capabilities if capabilities is not None else None
        self.takes_images = bool(prompts is not None and prompts.image)
        sessions = capabilities.session_capabilities if capabilities is not None else None
        self.can_fork = bool(sessions is not None and sessions.fork is not None)
        mcp = capabilities.mcp_capabilities if capabilities is not None else None
        self._http = bool(mcp is not None and mcp.http)

    def _servers(self) -> list[Any]:
        """The MCP servers in the protocol's shape; an HTTP one only if the agent takes
        HTTP servers (else said in :attr:`left_out`)."""
        servers: list[Any] = []
        self.left_out = []
        for spec in self._mcp_servers:
            if spec.url is not None:
                if not self._http:
                    self.left_out.append(f"{spec.name} (the agent takes no MCP server "
                                         f"over HTTP)")
                    continue
                servers.append(HttpMcpServer(type="http", name=spec.name, url=spec.url,
                                             headers=[HttpHeader(name=k, value=v)
                                                      for k, v in spec.headers.items()]))
            else:
                assert spec.command is not None
                servers.append(McpServerStdio(name=spec.name, command=spec.command,
                                              args=list(spec.args),
                                              env=[EnvVariable(name=k, value=v)
                                                   for k, v in spec.env.items()]))
        return servers

    async def new_session(self, cwd: Path, mode: str | None) -> str:
        response = await self._call(self._conn.new_session(
            cwd=str(cwd), mcp_servers=self._servers()), _START_TIMEOUT)
        self._take_modes(response.modes)
        session_id: str = response.session_id
        if mode is not None:
            await self.set_mode(session_id, mode)
        return session_id

    async def fork_session(self, session_id: str, cwd: Path, mode: str | None) -> str:
        """A new session of the agent's that starts with ``session_id``'s history (which
        goes on unchanged); its id."""
        response = await self._call(self._conn.fork_session(
            session_id=session_id, cwd=str(cwd), mcp_servers=self._servers()),
            _START_TIMEOUT)
        self._take_modes(response.modes)
        forked: str = response.session_id
        if mode is not None:
            await self.set_mode(forked, mode)
        return forked

    async def load_session(self, session_id: str, cwd: Path, mode: str | None) -> None:
        """Continue ``session_id`` in this process (the agent replays its history as
        updates, which the listener is expected to ignore)."""
        response = await self._call(self._conn.load_session(
            cwd=str(cwd), session_id=session_id, mcp_servers=self._servers()),
            _START_TIMEOUT)
        self._take_modes(getattr(response, "modes", None))
        if mode is not None:
            await self.set_mode(session_id, mode)

    def _take_modes(self, modes: Any) -> None:
        if modes is None:
            self.modes, self.current_mode = [], None
            return
        self.modes = [AgentMode(id=encodable(m.id), name=encodable(m.name or m.id),
                                description=encodable(m.description or ""))
                      for m in modes.available_modes]
        self.current_mode = encodable(modes.current_mode_id)

    async def set_mode(self, session_id: str, mode: str) -> None:
        known = [m["id"] for m in self.modes]
        if known and mode not in known:
            raise ProviderError(f"{self.agent_name} has no mode {mode!r}; its modes: "
                                f"{', '.join(known)}")
        await self._call(self._conn.set_session_mode(session_id=session_id, mode_id=mode),
                         _START_TIMEOUT)
        self.current_mode = mode

    async def prompt(self, session_id: str, blocks: Sequence[str | tuple[str, str]]
                     ) -> PromptResponse:
        """Send a prompt — ``blocks``: each a text, or an image as ``(media type, base64
        data)`` (only to an agent that :attr:`takes_images`) — and wait for the agent's
        answer to it (its updates arrive at the listener meanwhile)."""
        prompt = [TextContentBlock(type="text", text=block) if isinstance(block, str)
                  else ImageContentBlock(type="image", mime_type=block[0], data=block[1])
                  for block in blocks]
        response: PromptResponse = await self._call(self._conn.prompt(
            session_id=session_id, prompt=prompt), None)
        return response

    async def cancel(self, session_id: str) -> None:
        """``session/cancel`` (a notification: nothing is awaited but the write)."""
        if self.alive:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.cancel(session_id=session_id), 2)

    async def _call(self, request: Any, within: float | None) -> Any:
        """``request`` answered, or a :class:`ProviderError` saying how the agent failed:
        its process ended (with the last lines it wrote to stderr), it refused, or it
        did not answer ``within`` seconds."""
        call = asyncio.ensure_future(request)
        exited = asyncio.ensure_future(self.process.wait())
        try:
            done, _ = await asyncio.wait([call, exited], timeout=within,
                                         return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        finally:
            exited.cancel()
        if call in done and call.exception() is None:
            return call.result()
        call.cancel()
        if call in done and isinstance(call.exception(), ConnectionError):
            # The pipe closed: the process is ending, its exit status comes a moment later.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.process.wait(), _EXIT_WAIT)
        if not done:
            raise ProviderError(f"{self.agent_name} did not answer within {within or 0:g} s.",
                                retryable=True)
        if not self.process.running:
            await self.close()
            raise ProviderError(self.crash_text(), retryable=True)
        raise ProviderError(f"{self.agent_name} refused: {_error_text(call.exception())}")

    def crash_text(self) -> str:
        code = self.process.returncode
        tail = self.process.stderr_tail()
        said = ("; its last words on stderr:\n" + "\n".join(tail)) if tail else \
            " without a word on stderr."
        return (f"{self.agent_name} stopped (exit status {code}) in the middle of the turn"
                f"{said}\nThe next message starts it again.")

    def kill(self) -> None:
        """End the agent's process group and the protocol's tasks (never waits: the
        tasks end on the running loop, if there is one)."""
        self.process.kill()
        if self._pump is not None:
            self._pump.cancel()
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to end
                _keep(asyncio.get_running_loop().create_task(conn.close()))

    def close_soon(self) -> None:
        """:meth:`close` on the running loop, not waited for; without a running loop
        (nothing could wait for the process to exit), :meth:`kill`."""
        try:
            _keep(asyncio.get_running_loop().create_task(self.close()))
        except RuntimeError:
            self.kill()

    async def close(self) -> None:
        """End the agent gently, then surely (:meth:`AgentProcess.close`), and the
        protocol's tasks; wait until the process is reaped."""
        conn, self._conn = self._conn, None
        await self.process.close()
        if self._pump is not None:
            self._pump.cancel()
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


_closing: set[asyncio.Task[None]] = set()
"""Connections being closed (kept so their tasks are not collected half-way)."""


def _keep(closing: asyncio.Task[None]) -> None:
    """Hold ``closing`` until it is done."""
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)


def _error_text(error: BaseException | None) -> str:
    if error is None:
        return "no reason given"
    data = getattr(error, "data", None)
    text = str(error) or type(error).__name__
    return f"{text} ({data})" if data else text
