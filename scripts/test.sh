#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs all of it:
# lint, type check, unit and wire tests, notebooks (nbval) and browser tests.
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_updated=0
apt_install() {
  [ "$apt_updated" = 1 ] || { as_root apt-get update -qq; apt_updated=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Debian's Chromium drives the browser tests; Node.js builds the widgets' JS bundle.
[ -x /usr/bin/chromium ] || apt_install chromium
command -v npm >/dev/null || apt_install nodejs npm

python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[all,test]"

ruff check .
mypy
python -m pytest tests notebooks --nbval "$@"
