"""What a widget sent from a turn running in the background goes out again after the next
cell (``neta_nb.widgets.background_echo``), so notebooks executed by nbclient record it. These tests
stand in for the kernel: the request a send goes out under, and the end of a cell."""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]
import pytest

from neta_nb.widgets import TokenStats
from neta_nb.widgets import background_echo as _after_cell
from neta_nb.widgets import base as _base


class Kernel:
    """The request messages would name now, and the keys each widget sent."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.request: str | None = None
        self.sent: list[tuple[str | None, list[str]]] = []
        kernel = self

        def current_request() -> str | None:
            return kernel.request

        def send_state(widget: ipywidgets.Widget, key: Any = None) -> None:
            keys = sorted(widget.keys if key is None else [key] if isinstance(key, str)
                          else key)
            kernel.sent.append((kernel.request, keys))

        monkeypatch.setattr(_after_cell, "current_request", current_request)
        monkeypatch.setattr(_base, "current_request", current_request)
        monkeypatch.setattr(_after_cell, "_hook", lambda: True)
        monkeypatch.setattr(_after_cell, "_pending", {})
        monkeypatch.setattr(ipywidgets.Widget, "send_state", send_state)

    def end_cell(self, request: str) -> list[list[str]]:
        """The cell of ``request`` finishes: the keys sent again after it."""
        self.request, start = request, len(self.sent)
        _after_cell._after_cell()
        return [keys for _request, keys in self.sent[start:]]


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> Kernel:
    return Kernel(monkeypatch)


def test_state_sent_from_a_background_turn_goes_out_again_after_the_next_cell(
        kernel: Kernel) -> None:
    stats = TokenStats()
    kernel.request = "cell-1"  # the cell that started the turn, finished long ago
    stats.send_state("current")
    assert kernel.end_cell("cell-2") == [["current"]]
    assert kernel.end_cell("cell-3") == []  # once


def test_state_a_cell_sends_itself_is_not_sent_again(kernel: Kernel) -> None:
    stats = TokenStats()
    kernel.request = "cell-2"
    stats.send_state("lang")
    assert kernel.end_cell("cell-2") == []


def test_a_send_of_the_running_cell_does_not_drop_the_background_turns_sends(
        kernel: Kernel) -> None:
    # The background turn (started by cell 1) syncs its figures; while cell 2 runs, the
    # cell itself changes the same widget (here its language, or `stats.layout` read for
    # the first time). nbclient recorded cell 2's send, not the turn's: the turn's keys
    # still go out again under cell 2.
    stats = TokenStats()
    kernel.request = "cell-1"
    stats.send_state("current")
    kernel.request = "cell-2"
    stats.send_state("lang")
    (echoed,) = kernel.end_cell("cell-2")
    assert "current" in echoed


def test_a_widget_closed_before_the_next_cell_is_not_sent_again(kernel: Kernel) -> None:
    stats = TokenStats()
    kernel.request = "cell-1"
    stats.send_state("current")
    stats.close()
    assert kernel.end_cell("cell-2") == []


def test_a_failing_echo_does_not_reach_the_cell(kernel: Kernel,
                                                caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> None:
        raise RuntimeError("kernel shutting down")

    kernel.request = "cell-1"
    _after_cell.echo_after_cell("form", fail)
    stats = TokenStats()
    stats.send_state("current")
    assert kernel.end_cell("cell-2") == [["current"]]  # the others still go out
    assert "re-sending" in caplog.text


def test_a_cells_own_sends_are_not_carried_into_a_later_echo(kernel: Kernel) -> None:
    stats = TokenStats()
    kernel.request = "cell-1"
    stats.send_state("lang")
    assert kernel.end_cell("cell-1") == []
    kernel.request = "cell-1"  # later, a turn cell 1 started sends from the background
    stats.send_state("current")
    assert kernel.end_cell("cell-2") == [["current"]]


def test_a_chat_with_an_open_view_is_not_sent_again(kernel: Kernel) -> None:
    # A live page has the background turn's sends already (it goes by comm and display
    # id, not by cell): only a chat nobody views (nbclient) is echoed.
    from neta_nb.widgets import ChatView

    chat = ChatView()
    chat._view_opened({"view_id": "v1"})
    kernel.request = "cell-1"
    chat.send_state("running")
    assert kernel.end_cell("cell-2") == []
    chat._view_closed({"view_id": "v1"})
    kernel.request = "cell-1"
    chat.send_state("running")
    assert kernel.end_cell("cell-3") == [["running"]]
