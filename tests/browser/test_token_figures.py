"""Token figures as a person sees them, in JupyterLab Light and Dark: reported figures that
stay after the turn, usage the server never reported (unknown, not zero), and a context
share that is an estimate (after a compaction, on an assumed window) — each with the
details that explain it. Pictures go to docs/screenshots/ with
NETA_NB_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import LabSession

pytestmark = pytest.mark.browser

CELLS = ["""
from neta_nb.widgets import TokenStats
reported = TokenStats({"current": {"input_tokens": 1234, "output_tokens": 340,
                                   "total_tokens": 1574, "api_calls": 3},
                       "context": {"used_tokens": 64000, "max_tokens": 200000,
                                   "percent": 32.0}})
unreported = TokenStats({"current": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                                     "api_calls": 2, "unreported_calls": 2},
                         "context": {"used_tokens": 912, "max_tokens": 4096, "percent": 22.3,
                                     "estimate": "unreported"}}, running=True)
estimated = TokenStats({"current": {"input_tokens": 5200, "output_tokens": 610,
                                    "total_tokens": 5810, "api_calls": 3,
                                    "unreported_calls": 1},
                        "context": {"used_tokens": 41000, "max_tokens": 128000,
                                    "percent": 32.0, "estimate": "compaction",
                                    "window_assumed": True}})
display(reported, unreported, estimated)
""".strip()]

EXPECTED = [
    # compact line, detail lines that must be there
    # "· —": these figures name no price, so their cost is unknown (never "$0.00").
    (["↑1.2K", "↓340", "·", "3", "calls", "·", "—"], "Context 32%",
     ["Last turn", "Input1,234", "Context used64,000 / 200,000 (32%)"]),
    (["↑?", "↓?", "·", "2", "calls", "·", "—"], "Context ~22%",
     ["This turn", "Inputunknown", "No usage from the server2 of 2 calls",
      "Context used~912 / 4,096 (~22%)",
      "Estimated (~4 characters a token): the server reported no usage"]),
    (["↑5.2K+?", "↓610+?", "·", "3", "calls", "·", "—"], "Context ~32%",
     ["Input5,200 + unknown", "No usage from the server1 of 3 calls",
      "Estimated after compaction, until the next reported usage",
      "Window assumed: the server did not report one (set context_window)"]),
]
NAMES = ["reported", "unknown", "estimated"]


def _picture_states(lab: LabSession, directory: Path, theme: str) -> list[Path]:
    page = lab.page
    stats = page.locator(".neta-token-stats")
    pictures = []
    for index, (realtime, context, details) in enumerate(EXPECTED):
        item = stats.nth(index)
        assert item.locator(".neta-token-realtime").inner_text().split() == realtime
        assert item.locator(".neta-token-context-text").inner_text() == context
        item.evaluate("node => node.scrollIntoView({block: 'center'})")
        item.hover()
        panel = page.locator(".neta-token-details.neta-is-open")
        panel.wait_for()
        lab.wait_for_transitions()
        shown = panel.inner_text().replace("\n", "").replace("\t", "")
        for line in details:
            assert line in shown, (line, shown)
        left = item.bounding_box()
        box = panel.bounding_box()
        assert left is not None and box is not None
        # Nothing of the explanation is cut off: the panel fits in the window.
        assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"]
        top = left["y"] - 8
        clip = {"x": max(0, min(left["x"], box["x"]) - 8), "y": top,
                "width": max(left["width"], box["width"]) + 16,
                "height": box["y"] + box["height"] - top + 8}
        path = directory / f"token-stats-{NAMES[index]}-{theme}.png"
        page.screenshot(path=str(path), clip=clip, animations="disabled")
        pictures.append(path)
        page.mouse.move(0, 0)
        panel.wait_for(state="detached")
    return pictures


def test_token_figures_unknown_and_estimated_light_and_dark(lab: LabSession,
                                                            screenshot_dir: Path) -> None:
    lab.run_notebook("token-figures.ipynb", CELLS)
    lab.page.locator(".neta-token-stats").nth(2).wait_for()
    lab.set_left_area(collapsed=True)
    # The estimate is marked on the line itself too, not only in the details.
    marked = [lab.page.locator(".neta-token-context").nth(i).evaluate(
        "e => e.classList.contains('neta-is-estimated')") for i in range(3)]
    assert marked == [False, True, True]
    pictures = _picture_states(lab, screenshot_dir, "light")
    lab.set_theme(dark=True)
    pictures += _picture_states(lab, screenshot_dir, "dark")
    lab.set_theme(dark=False)
    lab.set_left_area(collapsed=False)
    assert all(path.stat().st_size > 1000 for path in pictures)


CHAT = """
answer = lambda text, i, o: [TextDelta(text), UsageUpdate(Usage(input_tokens=i, output_tokens=o)),
                             StreamDone("end_turn")]
provider = FakeProvider([answer("First answer.", 1200, 340), answer("Second answer.", 1900, 95),
                         answer("- asked twice, answered twice", 400, 30)],
                        context_window=8000)
session = AgentSession(Agent("analyst", model=provider, keep_recent_turns=1), ToolCatalog())
chat = ChatView(session)
chat
""".strip()


def test_the_chat_shows_the_last_turns_figures_and_an_estimate_after_compaction(
        lab: LabSession) -> None:
    from . import chat_cells

    path = lab.run_notebook("chat-token-figures.ipynb", [chat_cells.IMPORTS, CHAT])
    page = lab.page
    stats = page.locator(".neta-chat-stats .neta-token-stats")
    stats.wait_for()
    assert stats.locator(".neta-token-realtime").is_hidden()  # no call yet
    lab.execute(path, "await session.run('one')")
    page.wait_for_function("() => !document.querySelector('.neta-chat-view')"
                           ".classList.contains('neta-is-running')")
    # After the turn its figures stay: what the README shows.
    stats.locator(".neta-token-in", has_text="↑1.2K").wait_for()
    assert stats.locator(".neta-token-realtime").inner_text().split() == [
        "↑1.2K", "↓340", "·", "1", "call", "·", "—"]  # the fake model has no price
    assert stats.locator(".neta-token-context-text").inner_text() == "Context 19%"
    lab.execute(path, "await session.run('two')")
    stats.locator(".neta-token-in", has_text="↑1.9K").wait_for()
    assert stats.locator(".neta-token-context-text").inner_text() == "Context 25%"

    lab.execute(path, "await session.compact()")
    # The share after a compaction is an estimate until the next reported usage.
    stats.locator(".neta-token-context-text", has_text="~").wait_for()
    assert lab.execute(path, "print(session.context.estimate)").strip() == "compaction"
    stats.hover()
    panel = page.locator(".neta-token-details.neta-is-open")
    panel.wait_for()
    assert "Estimated after compaction" in panel.inner_text()
    # The conversation scrolls beside the figures (it follows what comes in, the compaction's
    # line too): the details stay open under the still pointer, which will not enter again.
    page.locator(".neta-chat-view .neta-chat-scroll").evaluate(
        "node => node.dispatchEvent(new Event('scroll'))")
    lab.wait_for_frames()
    assert panel.is_visible()
    lab.wait_for_transitions()
    # Looked at, not published: the chat's own screenshots are test_chat_screenshots'.
    path_png = (Path(__file__).parent / "artifacts" / "screenshots"
                / "chat-token-stats-after-compaction-light.png")
    path_png.parent.mkdir(parents=True, exist_ok=True)
    view = page.locator(".neta-chat-view").bounding_box()
    box = panel.bounding_box()
    assert view is not None and box is not None
    # The chat's input bar is at the bottom of the window: the details open above it,
    # whole, not cut off by the window's edge.
    assert box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"]
    top = min(box["y"], view["y"] + view["height"] - 70) - 8
    bottom = max(box["y"] + box["height"], view["y"] + view["height"]) + 8
    page.screenshot(path=str(path_png), animations="disabled", clip={
        "x": view["x"], "y": top, "width": view["width"], "height": bottom - top})
    page.mouse.move(0, 0)
    assert path_png.stat().st_size > 1000
