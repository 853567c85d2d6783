"""Inline completion's kernel side: the context a request carries (the variables by
``list_variables``' rules, bounded, no code of the notebook's classes run; previous cells
and the cell's error bounded), and the completer against a stand-in OpenAI-compatible
server on 127.0.0.1 that answers from the prompt it gets (fill-in-the-middle, the chat
fallback, cancellation that aborts the HTTP request, cost and budget)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest

from neta_nb import ModelPrice, create_provider
from neta_nb.providers import ScriptedProvider
from neta_nb.runtime.inline_completion import (
    CompletionContext,
    CompletionRequest,
    InlineCompleter,
    InlineCompletion,
    inline_completion,
    variable_context,
)
from neta_nb.runtime.inline_completion import completer as completer_module
from neta_nb.runtime.inline_completion.context import (
    CELLS_CHARS,
    ERROR_CHARS,
    PREFIX_CHARS,
    SUFFIX_CHARS,
    VARIABLES_BYTES,
)
from tests.support.fim_server import fim_server


class Messages:
    """What the completer sends to the page, and a wait for a request's end."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._ended = threading.Condition()

    def __call__(self, data: dict[str, Any]) -> None:
        with self._ended:
            self.sent.append(data)
            self._ended.notify_all()

    def wait_end(self, request_id: str, timeout: float = 10.0) -> dict[str, Any]:
        def end() -> dict[str, Any] | None:
            return next((m for m in self.sent if m["id"] == request_id
                         and m["kind"] in ("done", "error")), None)

        with self._ended:
            assert self._ended.wait_for(lambda: end() is not None, timeout), self.sent
            found = end()
            assert found is not None
            return found

    def text(self, request_id: str) -> str:
        return "".join(m["text"] for m in self.sent
                       if m["id"] == request_id and m["kind"] == "chunk")


def frame_namespace() -> dict[str, Any]:
    return {"df": pd.DataFrame({"revenue": [1], "region": ["north"]}), "pd": pd}


def context_at(prefix: str, namespace: dict[str, Any] | None, **request: Any) -> CompletionContext:
    return CompletionContext.build(CompletionRequest(prefix=prefix, **request), namespace)


# --- the context ----------------------------------------------------------------------------

def test_a_dataframe_is_described_by_its_columns_and_dtypes() -> None:
    text = variable_context(frame_namespace())
    assert text == "df: pandas.DataFrame, shape 1×2, columns {revenue: int64, region: str}"
    prompt = context_at('df["re', frame_namespace()).fim_prompt()
    assert "# df: pandas.DataFrame, shape 1×2, columns {revenue: int64, region: str}" in prompt
    assert prompt.endswith('df["re')


def test_a_1_gb_frame_adds_at_most_2_kb() -> None:
    # 1.08 GB as pandas counts it, without the memory: every row is one broadcast row.
    wide = np.broadcast_to(np.float64(0), (13_500_000, 10))
    big = pd.DataFrame(wide, columns=[f"measurement_{i:03d}_" + "x" * 40 for i in range(10)],
                       copy=False)
    assert big.memory_usage(index=False).sum() > 1e9
    many = pd.DataFrame(np.zeros((1, 5000)), columns=[f"column_{i}" for i in range(5000)])
    alone = len(context_at("x = 1", {}).fim_prompt().encode())
    with_big = context_at("big.", {"big": big, "many": many}).fim_prompt().encode()
    assert len(with_big) - alone <= 2048
    assert b"shape 13500000\xc3\x9710" in with_big


def test_the_variables_stay_within_their_bound_the_named_ones_first() -> None:
    namespace: dict[str, Any] = {f"value_{i:04d}": "v" * 100 for i in range(2000)}
    namespace["wanted"] = pd.DataFrame({"revenue": [1]})
    text = variable_context(namespace, 'wanted["re')
    assert len(text.encode()) <= VARIABLES_BYTES
    assert text.splitlines()[0].startswith("wanted: pandas.DataFrame")


def test_no_code_of_the_notebooks_classes_runs() -> None:
    ran: list[str] = []

    class Sneaky:
        def __repr__(self) -> str:
            ran.append("repr")
            return "sneaky"

        def __len__(self) -> int:
            ran.append("len")
            return 3

        @property
        def shape(self) -> tuple[int, int]:
            ran.append("shape")
            return (1, 2)

        @property
        def dtypes(self) -> None:
            ran.append("dtypes")

        def __getattr__(self, name: str) -> Any:
            ran.append(name)
            raise AttributeError(name)

    text = variable_context({"thing": Sneaky(), "items": [Sneaky()]}, "thing")
    assert ran == []
    assert "thing: tests.Sneaky" in text
    assert "items: list, len 1 = [<tests.Sneaky>]" in text


def test_cells_error_and_code_are_cut_to_their_bounds() -> None:
    cells = [f"cell_{i} = {'1' * 500}" for i in range(40)]
    context = context_at("p" * (PREFIX_CHARS + 500), {}, suffix="s" * (SUFFIX_CHARS + 500),
                         cells=tuple(cells), error="KeyError: " + "e" * 5000)
    assert len(context.prefix) == PREFIX_CHARS and len(context.suffix) == SUFFIX_CHARS
    assert sum(len(cell) for cell in context.cells) <= CELLS_CHARS
    assert context.cells[-1] == cells[-1]  # the nearest kept
    assert len(context.error) == ERROR_CHARS
    assert "# The last run of this cell failed with:\n# KeyError: eee" in context.fim_prompt()
    assert context.size() < 10_000


@pytest.mark.parametrize(("content", "problem"), [
    ({"id": "1"}, "'prefix' must be text, not NoneType"),
    ({"prefix": "x", "cells": "nope"}, "'cells' must be a list of texts"),
    ({"prefix": "x", "error": 3}, "'error' must be text, not int"),
])
def test_a_malformed_request_names_what_is_wrong(content: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        CompletionRequest.from_message(content)


# --- the completer against a server -----------------------------------------------------------

def completer_for(base_url: str, **options: Any) -> InlineCompleter:
    provider = create_provider("openai-compatible:coder", base_url=base_url, api_key="k",
                               price=ModelPrice(input=1.0, output=2.0))
    return InlineCompleter(provider, **options)


def test_fill_in_the_middle_answers_from_the_columns_it_was_given() -> None:
    with fim_server() as server:
        completer = completer_for(server.base_url, max_tokens=32)
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace(), suffix="\nprint(1)"),
                           sent)
        assert sent.wait_end("r1")["kind"] == "done"
        assert sent.text("r1") == 'venue"]'
        assert [m["kind"] for m in sent.sent] == ["chunk", "chunk", "done"]  # streamed
        body = server.bodies[0]
        assert server.paths == ["/v1/completions"]
        assert body["suffix"] == "\nprint(1)" and body["max_tokens"] == 32 and body["stream"]
        assert "columns {revenue: int64, region: str}" in body["prompt"]
        completer.wait_idle()
        assert completer.spend.calls == 1 and completer.spend.usd > 0


def test_llama_cpps_infill_gets_the_facts_as_extra_input() -> None:
    with fim_server() as server:
        completer = completer_for(server.base_url, fim="infill")
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace(), suffix="\n",
                                            cells=("x = 1",)), sent)
        assert sent.wait_end("r1")["kind"] == "done"
        assert sent.text("r1") == 'venue"]'
        (body,) = server.bodies
        assert server.paths == ["/infill"]
        assert body["input_prefix"] == 'df["re' and body["input_suffix"] == "\n"
        assert "columns {revenue: int64" in body["input_extra"][0]["text"]
        assert body["input_extra"][0]["text"].endswith("x = 1\n\n")
        completer.wait_idle()
        assert completer.spend.calls == 1 and completer.spend.usd > 0


def test_a_server_without_completions_is_asked_as_a_chat_model() -> None:
    with fim_server(fim=False) as server:
        completer = completer_for(server.base_url)
        sent = Messages()
        completer.complete("r1", context_at('df["reg', frame_namespace()), sent)
        assert sent.wait_end("r1")["kind"] == "done"
        assert sent.text("r1") == 'ion"]'
        assert server.paths == ["/v1/completions", "/v1/chat/completions"]
        assert completer.fim is False


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# The server's slow part comes before its answer's headers (it reads the prompt first, as
# llama-cpp-python does) or between the pieces of its answer: an abort ends the request
# in either, at once, not when the server next writes (5 s later).
SLOW = {"before the headers": {"header_delays": (5.0,)},
        "between the pieces": {"chunk_delay": 5.0}}


@pytest.mark.parametrize("slow", SLOW.values(), ids=SLOW.keys())
def test_a_new_request_aborts_the_one_in_flight(slow: dict[str, Any]) -> None:
    with fim_server(**slow) as server:
        completer = completer_for(server.base_url)
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace()), sent)
        assert wait_for(lambda: server.in_flight == 1, 5)
        server.chunk_delay = 0.0  # the second request is answered at once
        started = time.monotonic()
        completer.complete("r2", context_at('df["reg', frame_namespace()), sent)
        assert sent.wait_end("r2")["kind"] == "done"
        assert sent.text("r2") == 'ion"]'
        assert time.monotonic() - started < 1.5  # r2 did not wait out r1's connection
        completer.wait_idle()
        assert [m for m in sent.sent if m["id"] == "r1"] == []  # nothing stale reaches the page
        assert server.hung_up == 1  # the request was aborted, not only ignored
        assert server.most_in_flight == 1


def _cancel_in_flight(completer: Any, server: Any, sent: Messages) -> None:
    """Request r1, cancel it while the server holds it: the server sees the connection end
    at once, and the request's thread ends."""
    completer.complete("r1", context_at('df["re', frame_namespace()), sent)
    assert wait_for(lambda: server.in_flight == 1, 5)
    completer.cancel("r1")
    assert wait_for(lambda: server.hung_up == 1, 1.0)
    cancelled = time.monotonic()
    completer.wait_idle()
    assert time.monotonic() - cancelled < 1.0


@pytest.mark.parametrize("slow", SLOW.values(), ids=SLOW.keys())
def test_cancel_aborts_the_request(slow: dict[str, Any]) -> None:
    with fim_server(**slow) as server:
        completer = completer_for(server.base_url)
        sent = Messages()
        _cancel_in_flight(completer, server, sent)
        time.sleep(0.2)
        assert sent.sent == []
        assert server.hung_up == 1


def test_a_spent_budget_stops_completion_quietly() -> None:
    with fim_server() as server:
        completer = completer_for(server.base_url, budget_usd=0.000001)
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace()), sent)
        sent.wait_end("r1")
        completer.wait_idle()
        completer.complete("r2", context_at('df["re', frame_namespace()), sent)
        end = sent.wait_end("r2")
        assert end["kind"] == "error" and "budget" in end["message"]
        assert server.requests == 1


def test_a_server_error_is_an_error_message() -> None:
    completer = completer_for("http://127.0.0.1:9/v1")
    sent = Messages()
    completer.complete("r1", context_at("x", {}), sent)
    end = sent.wait_end("r1")
    assert end["kind"] == "error" and "failed" in end["message"]


def test_chat_requests_reuse_a_kept_alive_connection() -> None:
    # Each request's answer runs on the completer's thread: the provider's client keeps
    # the connection for the next one, which must still work on it.
    with fim_server(fim=False, keep_alive=True) as server:
        completer = completer_for(server.base_url)
        try:
            for request_id in ("r1", "r2", "r3"):
                sent = Messages()
                completer.complete(request_id, context_at('df["reg', frame_namespace()), sent)
                assert sent.wait_end(request_id) == {"kind": "done", "id": request_id}
                assert sent.text(request_id) == 'ion"]'
                completer.wait_idle()
            assert server.paths[1:] == ["/v1/chat/completions"] * 3
        finally:
            # The kept connection is closed on the loop that opened it (left to the
            # garbage collector, it would warn in a later test).
            closing = completer.provider._client.close()  # type: ignore[attr-defined]
            asyncio.run_coroutine_threadsafe(closing, completer_module._CHAT_LOOP.get()).result(5)


def test_cancel_aborts_a_chat_request() -> None:
    with fim_server(fim=False, chunk_delay=5.0) as server:
        completer = completer_for(server.base_url, fim=False)
        sent = Messages()
        _cancel_in_flight(completer, server, sent)
        assert sent.sent == []


@pytest.mark.parametrize("status", [400, 404, 405, 501])
def test_a_server_that_refuses_suffix_is_asked_as_a_chat_model(status: int) -> None:
    with fim_server(status=status) as server:
        completer = completer_for(server.base_url)
        sent = Messages()
        completer.complete("r1", context_at('df["reg', frame_namespace()), sent)
        assert sent.wait_end("r1")["kind"] == "done"
        assert sent.text("r1") == 'ion"]'
        assert server.paths == ["/v1/completions", "/v1/chat/completions"]


@pytest.mark.parametrize(("fim", "path"), [(True, "/v1/completions"), ("infill", "/infill")])
def test_a_failing_server_is_named_with_its_status_and_its_words(fim: Any, path: str) -> None:
    with fim_server(status=503) as server:
        completer = completer_for(server.base_url, fim=fim)
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace()), sent)
        end = sent.wait_end("r1")
        assert end["kind"] == "error"
        assert end["message"] == ("the completions endpoint answered 503: "
                                  "status 503: this server says no")
        completer.wait_idle()
        assert server.paths == [path]  # asked once: no retry, a retry's answer is stale
        assert server.authorizations == ["Bearer k"]


def test_fim_asked_by_name_refused_is_an_error() -> None:
    with fim_server(status=404) as server:
        completer = completer_for(server.base_url, fim=True)
        sent = Messages()
        completer.complete("r1", context_at('df["re', frame_namespace()), sent)
        end = sent.wait_end("r1")
        assert end["kind"] == "error" and "answered 404" in end["message"]
        assert server.paths == ["/v1/completions"]


def test_neta_nb_imports_without_the_openai_sdk() -> None:
    blocked = ("import sys; sys.modules['openai'] = None; import neta_nb; "
               "import neta_nb.runtime.inline_completion; print('imported')")
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "imported"


def test_fim_without_the_openai_sdk_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A provider of one's own at an OpenAI-compatible server, in an environment without
    # the openai extra: its chat works, its fill-in-the-middle names the extra.
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.delitem(sys.modules, "neta_nb.providers.openai_fim", raising=False)
    monkeypatch.delitem(sys.modules, "neta_nb.providers.openai", raising=False)
    provider = ScriptedProvider()
    monkeypatch.setattr(provider, "supplier", "openai-compatible")
    monkeypatch.setattr(provider, "base_url", "http://127.0.0.1:9/v1")
    completer = InlineCompleter(provider)
    assert completer.fim
    sent = Messages()
    completer.complete("r1", context_at("x = ", {}), sent)
    end = sent.wait_end("r1")
    assert end["kind"] == "error"
    assert "pip install 'neta-nb[openai]'" in end["message"]


# --- the switch -------------------------------------------------------------------------------

class RecordingComm:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed = False

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def close(self) -> None:
        self.closed = True


def switched_on(base_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[InlineCompletion,
                                                                           RecordingComm]:
    handle = inline_completion("openai-compatible:coder", base_url=base_url,
                               debounce_ms=120, max_tokens=16)
    comm = RecordingComm()
    monkeypatch.setattr(handle, "_comm", comm)
    monkeypatch.setattr(handle, "_namespace", frame_namespace)
    return handle, comm


def message(**data: Any) -> dict[str, Any]:
    return {"content": {"data": data}}


def test_the_switch_answers_the_page_until_it_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with fim_server() as server:
        handle, comm = switched_on(server.base_url, monkeypatch)
        assert handle.settings()["debounce_ms"] == 120
        handle._on_message(message(kind="complete", id="a", prefix='df["re', cells=["x = 1"]))
        handle.completer.wait_idle()
        assert "".join(m.get("text", "") for m in comm.sent) == 'venue"]'
        assert "x = 1\n\n" in server.bodies[0]["prompt"]
        handle.off()
        assert comm.closed and not handle.on
        handle._on_message(message(kind="complete", id="b", prefix='df["re'))
        handle.completer.wait_idle()
        assert server.requests == 1
        assert "1 calls" in repr(handle)


def test_a_malformed_message_gets_an_error_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    handle, comm = switched_on("http://127.0.0.1:9/v1", monkeypatch)
    handle._on_message(message(kind="complete", id="a", prefix=None))
    handle._on_message(message(kind="explode", id="b"))
    assert comm.sent == [
        {"kind": "error", "id": "a",
         "message": "inline completion request: 'prefix' must be text, not NoneType"},
        {"kind": "error", "id": "b", "message": "unknown inline completion message 'explode'"}]
    handle.off()


def test_switching_on_again_switches_the_previous_off(monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = switched_on("http://127.0.0.1:9/v1", monkeypatch)
    second, _ = switched_on("http://127.0.0.1:9/v1", monkeypatch)
    assert not first.on and second.on
    second.off()


@pytest.mark.parametrize(("options", "problem"), [
    ({"debounce_ms": -1}, "debounce_ms must be"),
    ({"max_tokens": 0}, "max_tokens must be"),
    ({"budget_usd": -2}, "budget_usd must be"),
    ({"fim": "yes"}, "fim must be True, False, None or 'infill'"),
])
def test_bad_settings_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        inline_completion("openai-compatible:coder", base_url="http://127.0.0.1:9/v1",
                          **options)


def test_without_a_model_or_a_key_it_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match="inline completion needs a model"):
        inline_completion()


def test_the_request_body_is_json_of_the_prompt() -> None:
    # What the benchmark and the browser test read back: the body is plain JSON.
    with fim_server() as server:
        completer = completer_for(server.base_url)
        sent = Messages()
        completer.complete("r1", context_at("total = ", {"n": 3}), sent)
        sent.wait_end("r1")
        assert json.loads(json.dumps(server.bodies[0]))["prompt"].startswith("# Variables")


def test_a_call_is_a_chat_span_without_contents_by_default() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from neta_nb.runtime.tracing.tracing import configure_tracing

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure_tracing(tracer_provider=tracer_provider)
    try:
        with fim_server() as server:
            completer = completer_for(server.base_url)
            for capture, request_id in ((False, "r1"), (True, "r2")):
                configure_tracing(tracer_provider=tracer_provider, capture_content=capture)
                sent = Messages()
                completer.complete(request_id, context_at('df["re', frame_namespace()), sent)
                sent.wait_end(request_id)
                completer.wait_idle()
    finally:
        configure_tracing(tracer_provider=None, capture_content=None)
    plain, captured = exporter.get_finished_spans()
    assert plain.name == "chat coder"
    assert plain.attributes is not None and captured.attributes is not None
    assert plain.attributes["gen_ai.operation.name"] == "chat"
    assert int(str(plain.attributes["gen_ai.usage.input_tokens"])) > 0
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output")) for key in plain.attributes)
    assert 'df[\\"re<CURSOR>' in str(captured.attributes["gen_ai.input.messages"])
    assert 'venue\\"]' in str(captured.attributes["gen_ai.output.messages"])
