"""``serve_notebook_mcp`` against what a notebook keeps and what a hostile reader sees:
the token is shown in the live widget, never in what the notebook saves."""

from __future__ import annotations

import asyncio
import atexit
from typing import Any

import pytest

import neta_nb
from neta_nb.widgets import mcp_review

from .conftest import SentMessages


class Kernel:
    """What the server asks of IPython: a shell with a kernel."""

    kernel = object()


async def test_the_token_is_in_no_text_the_notebook_saves(
        monkeypatch: pytest.MonkeyPatch, sent: SentMessages) -> None:
    monkeypatch.setattr(mcp_review, "get_ipython", lambda: Kernel())
    shown: list[Any] = []
    monkeypatch.setattr(mcp_review, "display", shown.append)
    monkeypatch.setattr(atexit, "register", lambda _f: None)
    token = "hostile-reader-token-0123456789"
    server = neta_nb.serve_notebook_mcp(token=token)
    try:
        [output] = shown
        # The cell's saved output: the widget reference and its text/plain fallback.
        bundle = output._repr_mimebundle_()
        assert token in output.children[0].value  # the live widget shows it
        assert all(token not in str(value) for value in bundle.values()), bundle
        assert token not in repr(output) and token not in repr(server)
    finally:
        await asyncio.to_thread(server.stop)
