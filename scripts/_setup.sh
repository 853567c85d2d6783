# Shared by scripts/test.sh and scripts/demo.sh: system packages and the project venv.
# Sourced, not run.

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

_apt_updated=0
apt_install() {
  [ "$_apt_updated" = 1 ] || { as_root apt-get update -qq; _apt_updated=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Node.js builds the widgets' JS bundle during the pip install (hatch_build.py).
ensure_node() { command -v npm >/dev/null || apt_install nodejs npm; }

# Creates (or reuses) .venv and installs the project into it with the given extras.
install_venv() {
  python3 -m venv .venv
  # shellcheck disable=SC1091
  . .venv/bin/activate
  python -m pip install -q --upgrade pip
  python -m pip install -q -e ".[$1]"
}
