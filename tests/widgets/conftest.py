"""Widgets in these tests have no frontend: comm messages go nowhere. ``sent`` records the
custom messages a widget sends, so the tests can check what a view would receive."""

from __future__ import annotations

from typing import Any

import pytest

from neta_nb.widgets.base import NetaWidget


class SentMessages(list[dict[str, Any]]):
    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [message for message in self if message.get("kind") == kind]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> SentMessages:
    messages = SentMessages()

    def record(self: NetaWidget, content: dict[str, Any], buffers: Any = None) -> None:
        messages.append(content)

    monkeypatch.setattr(NetaWidget, "send", record)
    return messages
