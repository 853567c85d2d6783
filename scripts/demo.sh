#!/usr/bin/env bash
# Installs neta_nb with JupyterLab into .venv and opens the quickstart notebook. Offline by
# default: with no API key set, the agent is the built-in scripted model.
#
# Usage: bash scripts/demo.sh [neta-nb lab options] [JupyterLab options]
#   e.g. --port 8890 --no-browser, --ip=0.0.0.0; --dry-run installs, then prints the
#   JupyterLab command instead of starting it (and copies no notebooks).
# Run as root (containers, many cloud notebooks) it passes --allow-root to JupyterLab,
# which otherwise refuses to start.
# Environment: NETA_NB_VENV=DIR uses that virtual environment instead of .venv;
# NETA_NB_SKIP_INSTALL=1 installs nothing and uses the environment as it is (offline).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_setup.sh

venv="${NETA_NB_VENV:-.venv}"
if [ "${NETA_NB_SKIP_INSTALL:-0}" = 1 ]; then
  echo "Using $venv as it is (NETA_NB_SKIP_INSTALL=1): nothing is installed"
  activate_venv "$venv"
else
  # Measured on a fresh copy on a 2-core machine with empty npm and pip caches (README):
  # 3 min 32 s to JupyterLab's URL; 55 s when run again.
  echo "Installing the demo into $venv, then starting JupyterLab: about 3 to 4 minutes" \
    "the first time on a 2-core machine (mostly npm and pip downloading), under a minute" \
    "when run again. Four steps, each announced: venv, JS build, Python packages, start."
  ensure_node
  install_venv "$DEMO_EXTRAS" "$venv"
fi

lab_args=("$@")
allowed=0
for arg in "$@"; do [ "$arg" != --allow-root ] || allowed=1; done
if [ "$(id -u)" = 0 ] && [ "$allowed" = 0 ]; then
  echo "Running as root: passing --allow-root to JupyterLab"
  lab_args+=(--allow-root)
fi
step start "neta-nb lab: JupyterLab on the quickstart notebook; open the URL it prints"
exec neta-nb lab "${lab_args[@]}"
