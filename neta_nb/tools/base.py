"""``Tool``, the ``@tool`` decorator and the per-call ``ToolContext`` (seed 000).

A tool is a typed Python function plus the facts the rest of the system needs about it:
its JSON schema (what the model sees), its *visibility* (which UI channel its calls use:
``internal`` tools such as ``todo`` emit no tool cards, ``skill`` tools get a skill card with
progress, plain ``tool`` calls get a tool card), its category and capability tags (for the
config panel and the resolver) and whether it is a *core* tool (on by default).

Arguments from the model are validated with pydantic against a model built from the
handler's signature before the handler runs; a failure raises :class:`ToolArgumentError`
whose text tells the model which argument was wrong, what was expected and what it sent.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, overload

import docstring_parser
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..events import ApprovalPreview
from ..messages import ToolCallPart, ToolDefinition
from ..todo import TodoStore
from .rich import RichResult
from .threads import ToolThreads

__all__ = [
    "PREVIEW_WAIT",
    "ApprovalPreviewer",
    "ProgressCallback",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolFailure",
    "ToolVisibility",
    "humanise_name",
    "preview_call",
    "tool",
]

log = logging.getLogger(__name__)

ToolVisibility = Literal["internal", "tool", "skill"]
_VISIBILITIES: tuple[str, ...] = get_args(ToolVisibility)

ProgressCallback = Callable[[float, "str | None", "str | None"], None]

ApprovalPreviewer = Callable[["ToolContext", dict[str, Any]], Awaitable[ApprovalPreview | None]]
"""``Tool.approval_preview``: a call's context and arguments -> what it will do."""

PREVIEW_WAIT = 5.0
"""Seconds a tool may take to describe a call waiting for approval before the request goes
out without its preview."""

# The name rule Anthropic and OpenAI both enforce for function tools; checking it here
# turns a provider-side 400 in the middle of a turn into an error at definition time.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # \Z: "$" would accept a final newline


def humanise_name(name: str) -> str:
    """``profile_table`` → ``Profile table``: the label a card shows when none is given."""
    words = re.sub(r"[_\-]+", " ", name).strip()
    return words[:1].upper() + words[1:] if words else name


class ToolArgumentError(ValueError):
    """The model's arguments did not match the tool's schema. ``str()`` is written for the
    model: which argument, what was expected, what was given."""

    def __init__(self, tool_name: str, problems: list[str]) -> None:
        self.tool_name = tool_name
        self.problems = problems
        lines = "\n".join(f"- {problem}" for problem in problems)
        super().__init__(f"Invalid arguments for tool '{tool_name}':\n{lines}\n"
                         "Fix the arguments and call the tool again.")


class ToolFailure(Exception):
    """A failure a tool words for the model itself: the runtime sends ``str()`` as the
    error result as it is (other exceptions are reported with their type name)."""


class ToolContext:
    """What a running tool may know about and report to its surroundings. The runtime
    builds one per call.

    ``progress`` may be called from any thread: a sync skill handler runs in a worker
    thread, and the callback is then delivered on the event loop that created the context
    (in call order), so subscribers — widgets among them — are only ever touched from
    the loop's thread.
    """

    def __init__(self, *, session_id: str = "", tool_call_id: str = "",
                 working_dir: Path | None = None, namespace: dict[str, Any] | None = None,
                 todo: TodoStore | None = None,
                 on_progress: ProgressCallback | None = None,
                 threads: ToolThreads | None = None, crew: Any = None,
                 notebook: Any = None, response_id: str = "",
                 response_calls: tuple[ToolCallPart, ...] = (), turn_id: str = "") -> None:
        self.session_id = session_id
        self.tool_call_id = tool_call_id
        self.working_dir: Path = Path(working_dir) if working_dir is not None else Path.cwd()
        self.namespace: dict[str, Any] = namespace if namespace is not None else {}
        self.todo: TodoStore = todo if todo is not None else TodoStore()
        self.on_progress = on_progress
        self.threads = threads
        """Where sync handlers run (the session's pool); ``None``: asyncio's default."""
        self.crew = crew
        """The session's sub-agents (a
        :class:`neta_nb.runtime.session.tool_calls.subagents.Crew`) when its agent may
        delegate; ``None`` otherwise."""
        self.notebook = notebook
        """The notebook the session's chat is on (a
        :class:`neta_nb.tools.notebook.NotebookAccess`), for the notebook tools."""
        self.response_id = response_id
        """The id of the model response whose call this is (``""``: none known)."""
        self.response_calls = response_calls
        """That response's calls to tools the agent has, in the order written (a tool
        that acts on several calls of one response together reads them here: the
        notebook's changes are reviewed as one, :mod:`neta_nb.tools.notebook.changes`)."""
        self.turn_id = turn_id
        """The id of the message that began the turn (``""``: none known)."""
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def progress(self, percent: float, step: str | None = None,
                 detail: str | None = None) -> None:
        """Report progress of a skill: ``percent`` is clamped to 0..100."""
        callback = self.on_progress
        if callback is None:
            return
        clamped = min(100.0, max(0.0, float(percent)))
        if clamped != clamped:  # NaN would render as a broken bar; treat it as no progress
            clamped = 0.0
        loop = self._loop
        if loop is not None and not loop.is_closed() and _running_loop() is not loop:
            loop.call_soon_threadsafe(callback, clamped, step, detail)
        else:
            callback(clamped, step, detail)

    def __repr__(self) -> str:
        return (f"ToolContext(session_id={self.session_id!r}, "
                f"tool_call_id={self.tool_call_id!r}, working_dir={str(self.working_dir)!r})")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool the model can call. Build one with :func:`tool`, or directly with a
    ``handler``: its signature (minus a ``ToolContext`` parameter) becomes the argument
    model, and ``parameters`` defaults to that model's JSON schema.

    ``parameters`` may be given explicitly to show the model a hand-written schema (the
    ``todo`` tool uses the seed's); arguments are still validated by the handler's
    signature, so keep the two compatible.
    """

    name: str
    description: str
    handler: Callable[..., Any] = field(repr=False)
    parameters: dict[str, Any] = field(default_factory=dict, repr=False)
    visibility: ToolVisibility = "tool"
    category: str = "custom"
    capabilities: frozenset[str] = frozenset()
    core: bool = False
    label: str = ""
    requires_approval: bool = False
    timeout: float | None = None
    """Seconds; ``None`` leaves the limit to the runtime's default."""
    scenes: frozenset[str] | None = None
    """Scenes the tool is offered in; ``None`` means every scene."""
    runs_on_main_thread: bool = False
    """Run a sync handler on the event loop's thread instead of a worker thread (for code
    that must touch the kernel's main thread). Async handlers always run on the loop."""
    reentrant: bool = False
    """Several calls of this tool in one response may run at the same time (by default
    they run one after the other, in the order the model wrote them)."""
    sequence: str | None = None
    """Tools naming the same sequence run their calls of one response one after the
    other, in the order the model wrote them, as one tool's calls do (the notebook tools:
    an edit and a run of the same cell must not race)."""
    needs_subagents: bool = False
    """Offered only to an agent that can delegate (``delegate``): see ``resolve_tools``."""
    needs_notebook_page: bool = False
    """Offered only where a notebook page answers (the notebook edit and run tools): see
    ``resolve_tools``."""
    approval_preview: ApprovalPreviewer | None = field(default=None, repr=False)
    """For a tool that needs approval: what a call will do, shown to the user who decides
    (the code ``python`` runs, the cell ``run_cell`` runs). Asked just before the request
    goes out, through :func:`preview_call`: bounded, and a failure or a slow answer only
    leaves the preview out (the arguments are shown)."""
    argument_descriptions: InitVar[dict[str, str] | None] = None
    """Per-argument descriptions for the generated schema (``@tool`` reads them from the
    docstring's ``Args:`` section)."""
    _arguments: type[BaseModel] = field(init=False, repr=False)
    _context_parameter: str | None = field(init=False, repr=False)

    def __post_init__(self, argument_descriptions: dict[str, str] | None) -> None:
        if not _TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, "
                             "'_' or '-' (the rule providers enforce)")
        if self.visibility not in _VISIBILITIES:
            raise ValueError(f"tool {self.name!r}: visibility must be one of "
                             f"{', '.join(_VISIBILITIES)}, got {self.visibility!r}")
        if not self.category or not isinstance(self.category, str):
            raise ValueError(f"tool {self.name!r}: category must be a non-empty string")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"tool {self.name!r}: timeout must be positive seconds or None")
        # Accept any iterable of strings for the set-valued fields: callers naturally
        # write capabilities={"vision"} or scenes=["chat"].
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))
        if self.scenes is not None:
            object.__setattr__(self, "scenes", frozenset(self.scenes))
        if not self.label:
            object.__setattr__(self, "label", humanise_name(self.name))
        arguments, context_parameter = _arguments_model(self.name, self.handler,
                                                        argument_descriptions or {})
        object.__setattr__(self, "_arguments", arguments)
        object.__setattr__(self, "_context_parameter", context_parameter)
        if not self.parameters:
            object.__setattr__(self, "parameters", _schema_of(arguments))

    @classmethod
    def from_function(cls, function: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None,
                      parameters: dict[str, Any] | None = None,
                      **options: Any) -> Tool:
        """Build a tool from a function: name from ``__name__``, description from the
        docstring's first paragraph, per-argument descriptions from its ``Args:``."""
        doc = docstring_parser.parse(inspect.getdoc(function) or "")
        argument_docs = {p.arg_name: p.description or "" for p in doc.params}
        return cls(name=name or function.__name__,
                   description=description or _first_paragraph(doc), handler=function,
                   parameters=parameters or {}, argument_descriptions=argument_docs,
                   **options)

    def definition(self) -> ToolDefinition:
        """The tool as a provider sends it to the model."""
        # The fields were checked when the tool was built; skipping re-validation keeps a
        # preview of thousands of tools cheap.
        return ToolDefinition.model_construct(name=self.name, description=self.description,
                                              parameters=self.parameters)

    def validate_arguments(self, args: dict[str, Any] | None) -> dict[str, Any]:
        """The handler's keyword arguments for ``args``, validated and coerced; raises
        :class:`ToolArgumentError` with a message for the model."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ToolArgumentError(self.name, [
                f"arguments must be a JSON object, got {type(args).__name__} {args!r:.200}"])
        try:
            validated = self._arguments.model_validate(args)
        except ValidationError as error:
            raise ToolArgumentError(self.name, _describe_problems(error, self.parameters)
                                    ) from None
        return {field.alias or name: getattr(validated, name)
                for name, field in type(validated).model_fields.items()}

    async def invoke(self, args: dict[str, Any] | None, ctx: ToolContext) -> str:
        """Validate ``args``, run the handler, return the text the model sees.

        Handler exceptions propagate unchanged; the runtime turns them into error results.
        """
        return (await self.invoke_rich(args, ctx)).model_text()

    async def invoke_rich(self, args: dict[str, Any] | None, ctx: ToolContext) -> RichResult:
        """Like :meth:`invoke`, with what the handler displayed (figures, tables): a
        handler returning a :class:`RichResult` keeps its items, any other value becomes
        its text."""
        if type(self).invoke is not Tool.invoke:
            # A subclass that runs calls its own way (MCP tools) overrides invoke: its
            # text is the result.
            return RichResult(text=await self.invoke(args, ctx))
        kwargs = self.validate_arguments(args)
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = ctx
        handler = self.handler
        if inspect.iscoroutinefunction(handler):
            result = await handler(**kwargs)
        elif self.runs_on_main_thread:
            result = handler(**kwargs)
        else:
            # Sync handlers run in a worker thread so the kernel keeps serving widget
            # messages (Stop, progress) while they work.
            threads = ctx.threads
            result = await (threads.run(handler, **kwargs) if threads is not None
                            else asyncio.to_thread(handler, **kwargs))
            if inspect.isawaitable(result):
                result = await result
        if isinstance(result, RichResult):
            return result.checked()
        return RichResult(text=render_result(result))

    def __repr__(self) -> str:
        flags = [self.visibility, self.category]
        if self.core:
            flags.append("core")
        if self.capabilities:
            flags.append("needs " + ",".join(sorted(self.capabilities)))
        return f"Tool({self.name!r}, {' '.join(flags)})"


def render_result(result: object) -> str:
    """A handler's return value as the text the model sees: strings as they are,
    everything else as JSON (pydantic models in their JSON mode)."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return pydantic_core.to_json(result, fallback=repr).decode()


def _first_paragraph(doc: docstring_parser.Docstring) -> str:
    text = doc.short_description or ""
    if doc.long_description and not doc.blank_after_short_description:
        # A summary that wraps onto more lines: the parser split it after its first line.
        text += "\n" + doc.long_description.split("\n\n", 1)[0]
    return " ".join(line.strip() for line in text.splitlines()).strip()


def _arguments_model(tool_name: str, handler: Callable[..., Any],
                     descriptions: dict[str, str]) -> tuple[type[BaseModel], str | None]:
    """A pydantic model of the handler's parameters, and the name of the parameter that
    receives the :class:`ToolContext` (not part of the schema)."""
    if not callable(handler):
        raise TypeError(f"tool {tool_name!r}: handler must be callable")
    signature = inspect.signature(handler)
    try:
        hints = typing.get_type_hints(handler)
    except (NameError, TypeError) as error:
        raise TypeError(f"tool {tool_name!r}: cannot resolve the type hints of its "
                        f"handler ({error})") from error
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    for parameter in signature.parameters.values():
        annotation = hints.get(parameter.name, Any)
        if annotation is ToolContext:
            context_parameter = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a "
                            "model; give every argument a name and a type")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool {tool_name!r}: positional-only parameter "
                            f"{parameter.name!r} cannot be passed by name")
        default = ... if parameter.default is parameter.empty else parameter.default
        description = descriptions.get(parameter.name) or None
        # Every field is stored under a neutral name with the parameter's name as alias, so
        # parameters called `schema`, `json`, `model_id` or `_x` do not collide with
        # pydantic's own attributes; errors and the schema use the alias.
        fields[f"argument_{len(fields)}"] = (
            annotation, Field(default, alias=parameter.name, description=description))
    model: type[BaseModel] = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", validate_by_alias=True, validate_by_name=False),
        **fields,
    )
    return model, context_parameter


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _drop_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    schema["type"] = "object"
    schema.pop("additionalProperties", None)
    return schema


def _drop_titles(node: Any, *, in_properties: bool = False) -> Any:
    """Remove pydantic's generated ``title`` keywords: they repeat the property names and
    cost the model tokens. A *property* called ``title`` is kept."""
    if isinstance(node, dict):
        return {key: _drop_titles(value, in_properties=key in ("properties", "$defs")
                                  and not in_properties)
                for key, value in node.items()
                if in_properties or not (key == "title" and isinstance(value, str))}
    if isinstance(node, list):
        return [_drop_titles(item) for item in node]
    return node


def _describe_problems(error: ValidationError, schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        location = ".".join(str(part) for part in detail["loc"]) or "(arguments)"
        top = str(detail["loc"][0]) if detail["loc"] else ""
        expected = _expected(properties.get(top)) if len(detail["loc"]) == 1 else None
        kind = detail["type"]
        if kind == "missing":
            problems.append(f"{location}: required argument is missing"
                            + (f" (expected {expected})" if expected else ""))
        elif kind == "extra_forbidden":
            known = ", ".join(properties) or "none"
            problems.append(f"{location}: unexpected argument (known arguments: {known})")
        else:
            given = detail.get("input")
            problems.append(f"{location}: {detail['msg']}"
                            + (f" (expected {expected})" if expected else "")
                            + f"; got {_short_repr(given)}")
    return problems


def _expected(property_schema: Any) -> str | None:
    if not isinstance(property_schema, dict):
        return None
    if "enum" in property_schema:
        return "one of " + ", ".join(repr(v) for v in property_schema["enum"])
    if "type" in property_schema:
        return str(property_schema["type"])
    options = property_schema.get("anyOf")
    if isinstance(options, list):
        types = [str(o.get("type")) for o in options if isinstance(o, dict) and "type" in o]
        return " or ".join(types) if types else None
    return None


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         visibility: ToolVisibility = "tool", category: str = "custom",
         capabilities: Iterable[str] = (), core: bool = False, label: str | None = None,
         requires_approval: bool = False, timeout: float | None = None,
         scenes: Iterable[str] | None = None, runs_on_main_thread: bool = False,
         parameters: dict[str, Any] | None = None,
         approval_preview: ApprovalPreviewer | None = None,
         ) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(function: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, visibility: ToolVisibility = "tool",
         category: str = "custom", capabilities: Iterable[str] = (), core: bool = False,
         label: str | None = None, requires_approval: bool = False,
         timeout: float | None = None, scenes: Iterable[str] | None = None,
         runs_on_main_thread: bool = False, parameters: dict[str, Any] | None = None,
         approval_preview: ApprovalPreviewer | None = None,
         ) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a :class:`Tool`. Use bare (``@tool``)
    or with options (``@tool(visibility="skill", category="skill")``).

    A parameter annotated :class:`ToolContext` receives the call's context and is left
    out of the schema.
    """

    def build(target: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            target, name=name, description=description, parameters=parameters,
            visibility=visibility, category=category, capabilities=frozenset(capabilities),
            core=core, label=label or "", requires_approval=requires_approval,
            timeout=timeout, scenes=None if scenes is None else frozenset(scenes),
            runs_on_main_thread=runs_on_main_thread, approval_preview=approval_preview)

    if function is not None:
        return build(function)
    return build


async def preview_call(tool: Tool, ctx: ToolContext,
                       args: dict[str, Any]) -> ApprovalPreview | None:
    """What a call of ``tool`` waiting for approval will do (``Tool.approval_preview``),
    bounded; ``None`` when the tool has no preview, or its preview failed or took longer
    than :data:`PREVIEW_WAIT` seconds: the approval is asked all the same."""
    if tool.approval_preview is None:
        return None
    try:
        async with asyncio.timeout(PREVIEW_WAIT):
            preview = await tool.approval_preview(ctx, dict(args))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the turn is being stopped
        return None
    except Exception:
        log.warning("tool %r could not describe a call for its approval", tool.name,
                    exc_info=True)
        return None
    return preview.bounded() if isinstance(preview, ApprovalPreview) else None
