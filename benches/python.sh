#!/usr/bin/env bash
# The Python package beside safetensors, torch.save, ZipNN and pyarrow's Parquet reader, written
# to docs/benchmarks/python.md. Needs the venv python/test.sh makes, the release CLI and the
# TPC-H lineitem table (benches/sql.sh makes it).
#
#     bash benches/python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${GLYD_VENV:-$HOME/.cache/glyd-venv}
export PATH="$venv/bin:$PATH"
models=$(bash benches/models.sh)
lineitem=${GLYD_LINEITEM:-$HOME/.cache/glyd-corpus/lineitem.csv}
cargo build --release -p glyd-cli
pip install --quiet --no-build-isolation ./python
out=docs/benchmarks/python.md
{
  echo "# The Python package"
  echo
  echo "\`bash benches/python.sh\` on $(nproc) cores ($(date -u +%Y-%m-%d)), $(python -c 'import torch, safetensors, zipnn, pyarrow; zv = getattr(zipnn, "__version__", "0.5"); print(f"torch {torch.__version__}, safetensors {safetensors.__version__}, zipnn {zv}, pyarrow {pyarrow.__version__}")')."
  echo
  RAYON_NUM_THREADS=1 python benches/python_bench.py tensors "$models" "$lineitem" target/release/glyd
  python benches/python_bench.py rest "$models" "$lineitem" target/release/glyd
} > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
