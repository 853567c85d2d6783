"""The README's commands: the two first-screen commands are the ones CI runs, and every
other command it names exists (scripts, subcommands, npm scripts, notebooks, images)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from neta_nb.cli import parse_arguments

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


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
    for path in re.findall(r"\]\(((?:docs|notebooks)/[^)]+)\)", README):
        assert (ROOT / path).is_file(), path
    for script in re.findall(r"scripts/[\w.]+\.sh", README):
        assert (ROOT / script).is_file(), script


def test_neta_nb_commands_parse() -> None:
    for command in re.findall(r"`(neta-nb [^`]+)`", README):
        args = shlex.split(command)[1:]
        parse_arguments([a if a != "DIR" else "x" for a in args])


def test_npm_scripts_exist() -> None:
    scripts = json.loads((ROOT / "js" / "package.json").read_text())["scripts"]
    for name in re.findall(r"npm run (\w+)", README):
        assert name in scripts, name


def test_npm_test_exists_where_the_readme_names_it() -> None:
    scripts = json.loads((ROOT / "js" / "package.json").read_text())["scripts"]
    assert "npm test" in README
    assert scripts["test"].startswith("node ")


def test_the_fast_loop_deselects_a_marker_that_exists() -> None:
    # `pytest -m "not browser"` with an unknown marker would silently run everything.
    pyproject = (ROOT / "pyproject.toml").read_text()
    expressions = re.findall(r'pytest -m "([^"]+)"', README)
    assert expressions, "the README names the fast loop"
    for expression in expressions:
        for marker in re.findall(r"\b(?!not\b|and\b|or\b)(\w+)", expression):
            assert f'"{marker}:' in pyproject, marker
    # Every browser test carries the marker, so the fast loop starts no Chromium.
    for path in (ROOT / "tests" / "browser").glob("test_*.py"):
        assert "pytest.mark.browser" in path.read_text(), path.name
