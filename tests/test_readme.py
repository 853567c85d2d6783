"""The README and the pages under docs/: the two first-screen commands are the ones CI runs,
every command they name exists (scripts, subcommands, npm scripts), every link reaches a file
and every `page.md#anchor` a heading, and every docs page is reachable from the README."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from neta_nb.cli import parse_arguments

ROOT = Path(__file__).resolve().parents[1]
README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
# The topic pages the README links to (docs/screenshots/README.md is a folder's own note).
DOCS = sorted((ROOT / "docs").glob("*.md"))
CONTRIBUTING = ROOT / "docs" / "contributing.md"
# Every page whose links and commands are checked, with its text.
PAGES = {path: path.read_text() for path in [README_PATH, *sorted((ROOT / "docs").rglob("*.md"))]}


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def links(text: str) -> list[str]:
    """The targets of the page's links and pictures, outside code."""
    prose = re.sub(r"`[^`\n]*`", "", without_code_blocks(text))
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def local_target(page: Path, link: str) -> tuple[Path, str] | None:
    """The file a relative link names (the page itself for `#anchor`) and its anchor;
    None for a URL."""
    if re.match(r"[a-z][a-z0-9+.-]*:", link):
        return None
    name, _, anchor = link.partition("#")
    return ((page.parent / name).resolve() if name else page), anchor


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation dropped,
    spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").replace("*", "").lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", without_code_blocks(text), flags=re.M):
        base = anchor = slug(heading)
        count = 0
        while anchor in found:  # a repeated heading: GitHub appends -1, -2, …
            count += 1
            anchor = f"{base}-{count}"
        found.add(anchor)
    return found


def first_screen_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    return [line.strip() for block in blocks[:2] for line in block.splitlines() if line.strip()]


def test_first_screen_has_the_demo_and_the_test_command_that_ci_runs() -> None:
    demo, tests = first_screen_commands()
    assert demo.endswith("bash scripts/demo.sh")
    assert tests.endswith("bash scripts/test.sh")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci and "bash scripts/demo.sh" in ci
    # The first screen: both commands appear before the first section heading.
    assert README.index("scripts/test.sh") < README.index("\n## ")


def test_named_files_exist() -> None:
    for page, text in PAGES.items():
        for link in links(text):
            target = local_target(page, link)
            if target is None:
                continue
            path, _ = target
            where = f"{page.relative_to(ROOT)}: {link}"
            assert path.is_relative_to(ROOT), where
            assert path.is_file(), where
        for script in re.findall(r"scripts/[\w.]+\.sh", text):
            assert (ROOT / script).is_file(), f"{page.relative_to(ROOT)}: {script}"


def test_links_to_headings_name_a_page_and_a_heading_it_has() -> None:
    for page, text in PAGES.items():
        for link in links(text):
            target = local_target(page, link)
            if target is None or not target[1]:
                continue
            path, anchor = target
            where = f"{page.relative_to(ROOT)}: {link}"
            assert path.suffix == ".md" and path.is_file(), where
            assert anchor in anchors(PAGES.get(path) or path.read_text()), where


def test_every_docs_page_is_linked_from_the_readme() -> None:
    assert DOCS, "the docs pages"
    linked = {target[0] for link in links(README) if (target := local_target(README_PATH, link))}
    for page in DOCS:
        assert page in linked, page.name


def test_docs_pages_have_a_title_and_a_link_back_to_the_readme() -> None:
    for page in DOCS:
        text = PAGES[page]
        assert text.startswith("# "), page.name
        back = {target[0] for link in links(text) if (target := local_target(page, link))}
        assert README_PATH in back, page.name


def test_neta_nb_commands_parse() -> None:
    for text in PAGES.values():
        for command in re.findall(r"`(neta-nb [^`]+)`", text):
            args = shlex.split(command)[1:]
            parse_arguments([a if a != "DIR" else "x" for a in args])


def test_npm_scripts_exist() -> None:
    scripts = json.loads((ROOT / "js" / "package.json").read_text())["scripts"]
    for text in PAGES.values():
        for name in re.findall(r"npm run (\w+)", text):
            assert name in scripts, name


def test_npm_test_exists_where_the_docs_name_it() -> None:
    scripts = json.loads((ROOT / "js" / "package.json").read_text())["scripts"]
    assert "npm test" in PAGES[CONTRIBUTING]
    assert scripts["test"].startswith("node ")


def test_the_fast_loop_deselects_a_marker_that_exists() -> None:
    # `pytest -m "not browser"` with an unknown marker would silently run everything.
    pyproject = (ROOT / "pyproject.toml").read_text()
    loops = r'pytest (?:-n \d+ )?-m "([^"]+)"'
    in_readme, in_contributing = re.findall(loops, README), re.findall(loops, PAGES[CONTRIBUTING])
    assert in_readme, "the README names the fast loop"
    # The README's fast loop is one of the loops docs/contributing.md lists.
    assert set(in_readme) <= set(in_contributing), in_readme
    for expression in in_readme + in_contributing:
        for marker in re.findall(r"\b(?!not\b|and\b|or\b)(\w+)", expression):
            assert f'"{marker}:' in pyproject, marker
    # Every browser test carries the marker, so the fast loop starts no Chromium.
    for path in (ROOT / "tests" / "browser").glob("test_*.py"):
        assert "pytest.mark.browser" in path.read_text(), path.name
