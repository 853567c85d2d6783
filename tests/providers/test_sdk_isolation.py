"""Vendor SDKs are imported only by their provider modules, and only when used."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)


def test_importing_the_package_imports_no_sdk() -> None:
    result = run("import sys, neta_nb, neta_nb.providers\n"
                 "from neta_nb.providers import create_provider\n"
                 "create_provider('scripted')\n"
                 "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("sdk", "module", "extra"), [
    ("anthropic", "neta_nb.providers.anthropic", "anthropic"),
    ("openai", "neta_nb.providers.openai", "openai"),
])
def test_a_missing_sdk_names_the_extra(sdk: str, module: str, extra: str) -> None:
    # `None` in sys.modules makes `import <sdk>` fail as if it were not installed.
    result = run(f"import sys; sys.modules[{sdk!r}] = None\n"
                 f"try:\n    import {module}\n"
                 f"except ImportError as error:\n    print(error)\n")

    assert result.returncode == 0, result.stderr
    assert f"pip install 'neta-nb[{extra}]'" in result.stdout
