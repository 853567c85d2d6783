#!/usr/bin/env bash
# Installs neta_nb with JupyterLab into .venv and opens the demo notebooks. Offline by
# default: with no API key set, the agent is the built-in scripted model.
# Usage: bash scripts/demo.sh [neta-nb lab options, e.g. --port 8890 --no-browser]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_setup.sh

ensure_node
install_venv "all,lab"
exec neta-nb lab "$@"
