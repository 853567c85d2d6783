"""Rich tool output: what the python tool captures (figures, plt.show, the last value's
rich form), the bounds of RichLimits and the text the model reads about it."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest

from neta_nb.tools import RichLimits, RichResult
from neta_nb.tools.builtin.python_exec import run_python_rich

plt = pytest.importorskip("matplotlib.pyplot")
Image = pytest.importorskip("PIL.Image")


async def test_figures_are_captured_at_show_and_at_the_end_then_closed() -> None:
    code = ("import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2]); plt.show()\n"
            "plt.figure(figsize=(3, 2)); plt.bar([1, 2], [3, 4])")
    result = await run_python_rich(code, {})
    assert [(i.media_type, i.width, i.height) for i in result.items] == [
        ("image/png", 640, 480), ("image/png", 300, 200)]
    assert plt.get_fignums() == []
    assert result.model_text().endswith(
        "[Displayed: image (640×480 PNG), image (300×200 PNG)]")
    assert len(result.images()) == 2


async def test_a_figure_the_user_had_open_is_left_alone() -> None:
    mine = plt.figure()
    try:
        result = await run_python_rich("x = 1", {})
        assert result.items == [] and plt.fignum_exists(mine.number)
    finally:
        plt.close(mine)


async def test_last_values_rich_forms_and_the_bounds() -> None:
    class Svg:
        def _repr_svg_(self) -> str:
            return '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>'

    class Broken:
        def _repr_html_(self) -> str:
            raise RuntimeError("no")

    namespace = {"Svg": Svg, "Broken": Broken}
    svg = await run_python_rich("Svg()", namespace)
    assert [i.media_type for i in svg.items] == ["image/svg+xml"] and svg.images() == []
    assert (await run_python_rich("Broken()", namespace)).items == []
    big = await run_python_rich(
        "from PIL import Image\nImage.new('RGB', (3000, 1500), 'white')", namespace)
    (image,) = big.items
    assert (image.width, image.height) == (1024, 512)
    with Image.open(io.BytesIO(base64.b64decode(image.data or ""))) as decoded:
        assert decoded.size == (1024, 512)

    limits = RichLimits(max_items=2, max_side=64)
    many = RichResult.of(*[Image.new("RGB", (100, 100)) for _ in range(5)], text="five",
                         limits=limits)
    assert len(many.items) == 2 and many.dropped == 3
    assert many.items[0].width == 64
    assert many.model_text() == ("five\n\n[Displayed: image (64×64 PNG), image (64×64 PNG), "
                                 "3 more left out (limit)]")
    html = RichResult.of(type("T", (), {"_repr_html_": lambda self: "x" * 300_000})())
    assert html.items == []  # too long to show whole: left out rather than cut


async def test_plain_results_keep_their_text() -> None:
    result = await run_python_rich("print('hi')\n2 + 2", {})
    assert result.items == [] and result.model_text() == "Output:\nhi\n\nResult:\n4"


async def test_figures_past_the_item_limit_are_counted_not_rendered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    rendered = []
    savefig = Figure.savefig

    def counting_savefig(self: Figure, *args: Any, **kwargs: Any) -> None:
        rendered.append(self)
        savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counting_savefig)
    code = ("import matplotlib.pyplot as plt\n"
            "for n in range(15):\n    plt.figure(figsize=(1, 1)); plt.plot([n])")
    result = await run_python_rich(code, {}, limits=RichLimits(max_items=3))
    assert len(rendered) == 3 and len(result.items) == 3
    assert result.model_text().endswith("12 more left out (limit)]")
    assert plt.get_fignums() == []  # the unrendered ones are closed too


async def test_items_a_tool_builds_itself_are_checked_and_bounded() -> None:
    from neta_nb import ToolContext, tool
    from neta_nb.messages import DisplayItem

    def b64(form: str, side: int = 20) -> str:
        buffer = io.BytesIO()
        Image.new("RGB", (side, side), "red").save(buffer, format=form)
        return base64.b64encode(buffer.getvalue()).decode()

    @tool
    def report() -> RichResult:
        """A report with pictures."""
        return RichResult(text="report", items=[
            DisplayItem(media_type="image/png", data="not base64 at all!"),
            DisplayItem(media_type="image/png", data=base64.b64encode(b"<html>").decode()),
            DisplayItem(media_type="image/png", data=b64("JPEG"), name="photo"),
            DisplayItem(media_type="image/png", data=b64("PNG", 3000)),
            DisplayItem(media_type="text/html", text="<table>" * 100_000),
            DisplayItem(media_type="application/x-evil", data=b64("PNG")),
            *[DisplayItem(media_type="image/png", data=b64("PNG")) for _ in range(20)]])

    result = await report.invoke_rich({}, ToolContext())
    assert [(i.media_type, i.width, i.name) for i in result.items] == [
        ("image/jpeg", 20, "photo"), ("image/png", 1024, None),
        ("image/png", 20, None), ("image/png", 20, None)]
    assert result.dropped == 22
    assert [image.media_type for image in result.images()] == [
        "image/jpeg", "image/png", "image/png", "image/png"]


async def test_a_huge_figure_is_rendered_small_enough_to_show(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    resolutions = []
    savefig = Figure.savefig

    def recording_savefig(self: Figure, *args: Any, **kwargs: Any) -> None:
        resolutions.append(kwargs.get("dpi", self.dpi))
        savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording_savefig)
    code = ("import matplotlib.pyplot as plt\n"
            "plt.figure(figsize=(120, 60), dpi=100); plt.plot([1, 2])")  # 12000×6000 px
    result = await run_python_rich(code, {})
    (item,) = result.items
    assert (item.media_type, item.width, item.height) == ("image/png", 1024, 512)
    assert float(resolutions[0]) < 100  # never 72 megapixels in memory
