# Shared by scripts/test.sh and scripts/demo.sh: system packages and the project venv.
# Sourced, not run.

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "Installing system packages needs root: run this script as root, install sudo," \
      "or run this yourself as root: $*" >&2
    return 1
  fi
}

_apt_updated=0
apt_install() {
  [ "$_apt_updated" = 1 ] || { as_root apt-get update -qq; _apt_updated=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Node.js builds the widgets' JS bundle during the pip install (hatch_build.py).
ensure_node() { command -v npm >/dev/null || apt_install nodejs npm; }

activate_venv() {
  if [ ! -f "$1/bin/activate" ]; then
    echo "No virtual environment at $1; run without NETA_NB_SKIP_INSTALL=1 to create it" >&2
    return 1
  fi
  # shellcheck disable=SC1091
  . "$1/bin/activate"
}

# Python 3.11 or newer as python3, with venv (Debian and Ubuntu ship it separately).
ensure_python() {
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "neta_nb needs Python 3.11 or newer as python3; found: $(python3 --version 2>&1)" >&2
    return 1
  fi
  python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
}

# Creates (or reuses) the venv (.venv unless given) and installs the project into it with
# the given extras.
install_venv() {
  local venv="${2:-.venv}"
  ensure_python
  python3 -m venv "$venv"
  activate_venv "$venv"
  python -m pip install -q --upgrade pip
  python -m pip install -q -e ".[$1]"
}
