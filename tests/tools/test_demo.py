"""The demo catalog: every seed category filled, real or clearly-stub tools."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from neta_nb.tools import (
    SEED_CATEGORIES,
    AgentToolConfig,
    ToolCatalog,
    ToolContext,
    ToolState,
    demo_catalog,
    resolve_tools,
)


@pytest.fixture
def demo() -> ToolCatalog:
    return ToolCatalog.demo()


def test_every_seed_category_is_filled(demo: ToolCatalog) -> None:
    groups = demo.categories()
    assert list(groups)[:len(SEED_CATEGORIES)] == list(SEED_CATEGORIES)
    assert "custom" in groups
    assert all(groups[c] for c in SEED_CATEGORIES)


def test_demo_shows_every_state_and_filter(demo: ToolCatalog) -> None:
    assert demo_catalog().names == demo.names
    assert not demo.is_globally_enabled("web_search")
    assert demo["describe_image"].capabilities == frozenset({"vision"})
    config = AgentToolConfig(enabled=["describe_image", "delegate", "python"],
                             disabled=["read_file"])
    result = resolve_tools(demo, config, model_capabilities={"tools"}, scene="chat")
    states = set(result.states.values())
    assert states == set(ToolState)
    assert result.reasons["describe_image"].startswith("Needs the 'vision' capability")
    assert result.reasons["delegate"] == "Not offered in scene 'chat'"


def test_stub_tools_say_so(demo: ToolCatalog) -> None:
    for name in ("ask_user", "web_search"):
        assert demo[name].description.startswith("Demo stub:")


def test_demo_delegate_is_the_real_tool_limited_to_the_crew_scene(demo: ToolCatalog) -> None:
    real = ToolCatalog.default()["delegate"]
    assert demo["delegate"].handler is real.handler
    assert demo["delegate"].parameters == real.parameters
    assert demo["delegate"].scenes == frozenset({"crew"}) and not demo["delegate"].core


async def test_real_demo_tools_work(tmp_path: Path, demo: ToolCatalog) -> None:
    ctx = ToolContext(session_id="s-demo", working_dir=tmp_path)
    assert await demo["calculate"].invoke({"expression": "(17.5 * 12) / 3"}, ctx) == (
        "(17.5 * 12) / 3 = 70.0")
    with pytest.raises(ValueError, match="only numbers and arithmetic operators"):
        await demo["calculate"].invoke({"expression": "__import__('os')"}, ctx)
    with pytest.raises(ValueError, match="exponent too large"):
        await demo["calculate"].invoke({"expression": "9 ** 99999"}, ctx)
    assert await demo["remember"].invoke({"key": "k", "value": "v"}, ctx) == "Remembered 'k'."
    assert await demo["recall"].invoke({"key": "k"}, ctx) == "v"
    assert await demo["recall"].invoke({}, ctx) == "Keys: k"
    with pytest.raises(KeyError, match="nothing remembered under 'zz'"):
        await demo["recall"].invoke({"key": "zz"}, ctx)
    assert await demo["recall"].invoke({}, ToolContext(session_id="other")) == (
        "Nothing remembered yet.")
    (tmp_path / "doc.txt").write_text("two words\nthree more words\n")
    assert await demo["word_count"].invoke({"path": "doc.txt"}, ctx) == (
        '{"file":"doc.txt","lines":2,"words":5,"characters":27}')


async def test_describe_image_reads_png_and_gif_headers(tmp_path: Path,
                                                        demo: ToolCatalog) -> None:
    header = struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0)
    png = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header
           + struct.pack(">I", zlib.crc32(b"IHDR" + header)))
    (tmp_path / "a.png").write_bytes(png)
    (tmp_path / "b.gif").write_bytes(b"GIF89a" + struct.pack("<HH", 7, 5) + b"\x00" * 8)
    jpeg = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 4, 6) + b"\x00" * 12)
    (tmp_path / "d.jpg").write_bytes(jpeg)
    (tmp_path / "c.txt").write_text("not an image")
    ctx = ToolContext(working_dir=tmp_path)
    assert await demo["describe_image"].invoke({"path": "a.png"}, ctx) == (
        f"'a.png': PNG image, 3×2 pixels, {len(png)} bytes.")
    assert (await demo["describe_image"].invoke({"path": "b.gif"}, ctx)).startswith(
        "'b.gif': GIF image, 7×5 pixels")
    assert (await demo["describe_image"].invoke({"path": "d.jpg"}, ctx)).startswith(
        "'d.jpg': JPEG image, 6×4 pixels")
    with pytest.raises(ValueError, match="not a PNG, JPEG or GIF"):
        await demo["describe_image"].invoke({"path": "c.txt"}, ctx)
