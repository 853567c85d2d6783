"""What a user does in the browser reaches the kernel; streamed thinking arrives whole."""

from __future__ import annotations

import pytest

from . import gallery
from .harness import LabSession

pytestmark = pytest.mark.browser


def test_user_changes_reach_the_kernel(lab: LabSession) -> None:
    path = lab.run_notebook("interact.ipynb", [
        gallery.SETUP, gallery.TODO, gallery.SELECTOR,
        "chosen = []\nremove = selector.on_change(chosen.append)",
    ])
    page = lab.page
    header = page.locator(".neta-todo-header")
    header.click()
    assert lab.wait_for_kernel_value(path, "todo.collapsed", "True") == "True"
    # Collapsed, the card still shows the active row, and only it (once the rows have
    # folded away).
    card = page.locator(".neta-todo-card.neta-is-collapsed")
    card.wait_for()
    lab.wait_for_transitions(card)
    visible = [row.is_visible() and row.evaluate("n => n.getBoundingClientRect().height") > 1
               for row in page.locator(".neta-todo-row").all()]
    assert visible == [False, False, True, False, False]

    page.locator(".neta-level-select").select_option("high")
    assert lab.wait_for_kernel_value(path, "selector.level", "high") == "high"
    assert lab.wait_for_kernel_value(path, "chosen", "['high']") == "['high']"


def test_streamed_thinking_arrives_whole_and_recovers_from_a_gap(lab: LabSession) -> None:
    path = lab.run_notebook("stream.ipynb", [
        gallery.SETUP,
        "block = ThinkingBlock()\nblock.start()\nblock",
    ])
    page = lab.page
    page.locator(".neta-thinking-block.neta-is-streaming").wait_for()
    # 2,000 small deltas from a synchronous loop: batched, never one message per delta.
    lab.execute(path, "sent = []\n"
                      "orig = block.send\n"
                      "block.send = lambda msg, buffers=None: (sent.append(msg), orig(msg))\n"
                      "for i in range(2000):\n"
                      "    block.append(f'w{i} ')\n"
                      "block.flush()\n"
                      "print(len(sent))")
    expected = " ".join(f"w{i}" for i in range(2000))
    page.wait_for_function(
        "(expected) => document.querySelector('.neta-thinking-content').textContent.trim()"
        " === expected", arg=expected)
    batches = int(lab.execute(path, "print(len(sent))"))
    assert 1 <= batches < 200

    # A lost batch (simulated by skipping a number) makes the view ask for a snapshot.
    lab.execute(path, "block._batcher.seq += 1\nblock.append('after-gap')\nblock.flush()")
    page.wait_for_function(
        "() => document.querySelector('.neta-thinking-content').textContent.trim()"
        ".endsWith('w1999 after-gap')")
    lab.execute(path, "block.done()")
    page.wait_for_function("() => !document.querySelector('.neta-thinking-block')"
                           ".classList.contains('neta-is-streaming')")
    text = page.locator(".neta-thinking-content").text_content() or ""
    assert text.strip() == expected + " after-gap"
