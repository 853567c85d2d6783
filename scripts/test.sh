#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs all of it:
# lint, type check, the widgets' JS unit tests, Python unit and wire tests, a real model
# behind a real OpenAI-compatible server (llama-cpp-python), notebooks (nbval) and browser
# tests.
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_setup.sh

# Debian's Chromium drives the browser tests; the Chinese screenshots need a font with
# CJK glyphs (without one Chromium draws empty boxes).
[ -x /usr/bin/chromium ] || apt_install chromium
fc-list :lang=zh 2>/dev/null | grep -q . || apt_install fonts-noto-cjk
# A real PostgreSQL server for the store's tests (tests/support/postgres_server.py starts
# its own cluster; the one Debian's package may start is not used).
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
  || apt_install postgresql
ensure_node
# ray: the batch runs' Ray backend runs on a real local cluster (tests/batch/test_ray.py).
install_venv "all,lab,test,ray"
# The notebooks run on a kernel with the demo's extras alone (scripts/demo.sh installs
# those): a notebook that needs a package the demo does not install fails here.
install_demo_kernel .venv-demo
install_llama_server

ruff check .
mypy
# The import layers and their two named exceptions ([tool.importlinter] in pyproject.toml;
# docs/contributing.md#layers).
lint-imports
# The pip install above ran `npm ci` in js/ to build the widgets; their pure logic has
# unit tests of its own (Node's test runner).
(cd js && npm test)
# ...and so has the JupyterLab extension, on a real shared notebook (its @jupyter/ydoc).
(cd js/labextension && npm test)
# ...and a linter (biome, locked in js/package-lock.json) over the TS sources.
(cd js && npm run lint)
# The reference MCP server the MCP tests start (locked; tests/tools/mcp/test_mcp.py).
(cd tests/fixtures/mcp_everything && npm ci --no-audit --no-fund)
# The Codex CLI, a real outside client of the notebook's MCP server (locked;
# tests/runtime/test_mcp_server_codex.py).
(cd tests/fixtures/codex_cli && npm ci --no-audit --no-fund)
# Outside agents over the Agent Client Protocol — Claude Code, Codex, Gemini CLI — that
# AcpAgent's tests drive offline (locked; tests/runtime/acp/).
(cd tests/fixtures/acp_agents && npm ci --no-audit --no-fund)
# What an HTML export with widget state loads from the web (the widget manager, require.js,
# anywidget's frontend), served locally by tests/browser/test_export_widgets.py (locked).
(cd tests/fixtures/html_manager && npm ci --no-audit --no-fund)
# Two workers (pytest-xdist): the browser tests mostly wait on JupyterLab, Chromium and
# kernels, so two of them share two cores well. Whole files per worker, browser files
# last, the Ray files on one worker (tests/support/parallel.py). `-n 0` as an extra
# argument runs everything in one process.
# A notebook's kernel gets 180 s to start, not nbval's 60: beside two JupyterLabs and two
# Chromiums on two cores, a kernel once took longer.
# The slowest tests are listed at the end: the suite is timed on every fresh clone.
python -m pytest -n 2 tests notebooks --nbval --nbval-kernel-name="$DEMO_KERNEL" \
  --nbval-kernel-startup-timeout=180 \
  --durations=25 "$@"
