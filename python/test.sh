#!/usr/bin/env bash
# The Python package's tests: installs ./python (built by maturin, release profile) into a
# virtual environment kept outside the checkout, so a machine makes it once ($GLYD_VENV,
# default ~/.cache/glyd-venv, with numpy, pyarrow, pandas, torch, safetensors and zipnn: the
# PyPI torch wheel brings CUDA libraries, ~5 GB), then runs pytest. The tests compare with the
# glyd CLI that `cargo test --workspace` builds (or $GLYD_BIN).
#
#     bash python/test.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")"
venv=${GLYD_VENV:-$HOME/.cache/glyd-venv}
# maturin (the build backend) runs from the environment without it being activated.
export PATH="$venv/bin:$PATH"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" 2>/dev/null || {
    (apt-get update -qq && apt-get install -y -qq python3-venv) >/dev/null 2>&1 \
      || (sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv)
    python3 -m venv "$venv"
  }
fi
if ! "$venv/bin/python" -c "import maturin, numpy, pyarrow, pandas, torch, safetensors, zipnn, pytest" 2>/dev/null; then
  "$venv/bin/pip" install --quiet maturin numpy pyarrow pandas pytest safetensors torch zipnn
fi
# A dev-profile build (the codec crates are optimized in it too) shares most of its work with
# `cargo test --workspace`; benches/python.sh installs the release build it measures.
MATURIN_PEP517_ARGS="--profile dev" "$venv/bin/pip" install --quiet --no-build-isolation .
cd tests
exec "$venv/bin/python" -m pytest -q "$@"
