#!/usr/bin/env bash
# SQL over archives beside Parquet, committed as docs/benchmarks/sql.md: TPC-H lineitem (scale
# 0.1, tpchgen-cli) as a glyd record archive and as Parquet zstd(3), sizes and Q1/Q6 median wall
# times on 1 and 2 threads, in one process (udf/examples/tpch_timing.rs).
#
#   bash benches/sql.sh            # RUNS=5 by default
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
big=$(bash benches/corpus/make.sh)
# Release, not the fat-LTO bench profile: DataFusion under fat LTO takes most of an hour.
cargo build --release -p glyd-udf --example tpch_timing >&2
out=docs/benchmarks/sql.md
tmp=$(mktemp)
{
  echo "# SQL over record archives beside Parquet"
  echo
  echo "Produced by \`bash benches/sql.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores, shared and noisy: compare the ratios, not the milliseconds. DataFusion 55.2,"
  echo "glyd-udf built with the release profile."
  echo
  target/release/examples/tpch_timing "$big/lineitem.csv" "$runs"
} > "$tmp"
mv "$tmp" "$out"
cat "$out"
