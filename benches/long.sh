#!/usr/bin/env bash
# Long-distance matching: `glyd --max --long` and `--ultra --long` beside the plain levels and
# zstd -3 / -19 with and without --long (a 128 MiB window, as glyd's), in one process on the
# same bytes (`glyd -b --long`, 1 thread). Inputs: the first 64 MiB of the Linux 6.1 source
# tar, and two overlapping snapshots of it (its first 48 MiB, then its bytes 16..64 MiB: the
# middle 32 MiB seen twice, 32 MiB apart, past every plain window). Writes
# docs/benchmarks/long.md.
#
#   bash benches/long.sh          # RUNS=3 timed runs per measurement by default
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
big=$(bash benches/corpus/make.sh)
snap="$big/linux-snapshots.tar"
if [ ! -s "$snap" ]; then
  { head -c $((48 << 20)) "$big/linux-64M.tar"; tail -c +$(((16 << 20) + 1)) "$big/linux-64M.tar" | head -c $((48 << 20)); } > "$snap.part"
  mv "$snap.part" "$snap"
fi
cargo build --profile bench -p glyd-cli --no-default-features >&2
glyd=target/release/glyd
[ -x target/bench/glyd ] && glyd=target/bench/glyd
out=docs/benchmarks/long.md
tmp=$(mktemp)
{
  echo "# Long-distance matching (\`--long\`) beside zstd --long"
  echo
  echo "Produced by \`bash benches/long.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB. glyd built with the \`bench\` profile (fat LTO)."
  echo
  echo "Every codec runs in the same process on the same bytes, 1 thread; each output is decoded"
  echo "and compared with the input before timing. Speeds are medians of $runs timed runs, in MB/s."
  echo "\`--long\` makes glyd's blocks 128 MiB (so each input here is one block) and runs the"
  echo "long-distance matcher before the parser; zstd's rows set its long-distance mode and a"
  echo "2^27-byte window. The snapshots file is the first 48 MiB of the tar followed by its bytes"
  echo "16..64 MiB: 32 MiB of source seen twice, 32 MiB apart."
  for f in linux-64M.tar linux-snapshots.tar; do
    echo
    echo "## $f"
    echo
    echo "\`glyd -b --long --markdown --bench-runs $runs -T 1 \$CACHE/$f\`"
    echo
    "$glyd" -b --long --markdown --bench-runs "$runs" -T 1 "$big/$f"
  done
} > "$tmp"
mv "$tmp" "$out"
echo "wrote $out" >&2
