#!/usr/bin/env bash
# GPU check for glyd-gpu. On a machine with an NVIDIA GPU and a Rust toolchain:
#   bash gpu/check.sh [MODEL.safetensors]
# builds with --features cuda, runs the GPU tests (kernels against the CPU reference, bit for
# bit) and prints decode GB/s and fused GEMV vs cuBLAS. On a GPU machine without Rust, build
# here first with `bash gpu/check.sh --build` (binaries go to target/gpu-check/), carry that
# folder along, and run `bash gpu/check.sh --run [MODEL]` there.
# MODEL defaults to the bf16 cast of all-MiniLM-L6-v2 that benches/tensors.sh makes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/gpu-check
MODEL_DEFAULT="${GLYD_MODELS:-$HOME/.cache/glyd-models}/minilm-bf16.safetensors"

build() {
  mkdir -p "$OUT"
  cargo build --release -p glyd-gpu --features cuda --example gpu_bench
  cp target/release/examples/gpu_bench "$OUT/"
  local bin
  bin=$(cargo test --release -p glyd-gpu --features cuda --test cuda --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="cuda" and m.get("executable"): print(m["executable"])')
  cp "$bin" "$OUT/cuda_tests"
  if [ -f "$MODEL_DEFAULT" ]; then cp "$MODEL_DEFAULT" "$OUT/"; fi
}

# cudarc (built for CUDA 12.8, loading libraries at run time) looks for libnvrtc.so, libcublas.so
# or their .so.12 names; a CUDA 13 install may register only .so.13 or none of them with the
# loader. Put the toolkit's library folders on the path and link the unversioned names.
find_cuda_libs() {
  local dir="$OUT/lib" d lib f
  mkdir -p "$dir"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64; do
    if [ -d "$d" ]; then LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; fi
  done
  for lib in nvrtc cublas cublasLt; do
    if ldconfig -p 2>/dev/null | grep -q "lib$lib\.so "; then continue; fi
    # Never the link-time stubs (lib64/stubs): their entry points only return errors.
    f=$(find /usr/local/cuda*/ -name "lib$lib.so.*" -not -path '*/stubs/*' 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$f" ] && [ ! -e "$dir/lib$lib.so" ]; then ln -s "$f" "$dir/lib$lib.so"; fi
  done
  export LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}"
}

run() {
  local model="${1:-}"
  find_cuda_libs
  if [ -z "$model" ]; then
    if [ -f "$OUT/minilm-bf16.safetensors" ]; then model="$OUT/minilm-bf16.safetensors"; else model="$MODEL_DEFAULT"; fi
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  echo "== GPU tests (kernels vs CPU reference)"
  "$OUT/cuda_tests" --test-threads 1 --nocapture
  echo "== GPU benchmark on $model"
  "$OUT/gpu_bench" "$model"
}

case "${1:-}" in
  --build) build ;;
  --run) shift; run "${1:-}" ;;
  *) build; run "${1:-}" ;;
esac
