#!/usr/bin/env bash
# Queries over a lake on an S3 API server, glyd beside Parquet, committed as
# docs/benchmarks/lake.md: TPC-H lineitem (scale 0.1, tpchgen-cli) and a log (the corpus'
# HDFS_2k.log, 20 times over) as glyd archives and as Parquet zstd(3) on moto_server, read by
# DataFusion through one counting store (cli/examples/lake_bench.rs): requests, bytes fetched
# and times of Q1, Q6 and a selective log query.
#
#   bash benches/lake.sh            # RUNS=5 by default
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
big=$(bash benches/corpus/make.sh)
command -v moto_server >/dev/null 2>&1 || pip install --quiet 'moto[server]'
# Release, not the fat-LTO bench profile: DataFusion under fat LTO takes most of an hour.
cargo build --release -p glyd-cli --example lake_bench >&2
tmp=$(mktemp -d)
trap 'kill $moto 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 20); do cat ../shared/corpus/loghub/HDFS_2k.log; done > "$tmp/logs.log"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" >"$tmp/moto.log" 2>&1 &
moto=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port" && break; sleep 0.2; done
curl -s -X PUT -o /dev/null "http://127.0.0.1:$port/bench"
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
out=docs/benchmarks/lake.md
{
  echo "# A lake on object storage: glyd beside Parquet"
  echo
  echo "Produced by \`bash benches/lake.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores, shared and noisy: compare the ratios, not the milliseconds. DataFusion 55.2"
  echo "reads both tables from moto_server (an S3 API server) on 127.0.0.1 through one wrapper of"
  echo "the store that counts GET and HEAD requests and the bytes they return. The Parquet files"
  echo "(zstd level 3, DataFusion's default row groups) are written from the archives' own Arrow"
  echo "batches, so both tables have the same types; every query's results are compared before"
  echo "anything is printed. First run: a new session, nothing cached (glyd's archive indexes and"
  echo "Parquet's footers both fetched); warm: the same session again."
  echo
  echo "Inputs: TPC-H lineitem at scale 0.1 ($(du -h "$big/lineitem.csv" | cut -f1) of CSV), and the"
  echo "corpus' HDFS_2k.log 20 times over ($(du -h "$tmp/logs.log" | cut -f1))."
  echo
  target/release/examples/lake_bench "$big/lineitem.csv" "$tmp/logs.log" "$runs"
} > "$tmp/lake.md"
mv "$tmp/lake.md" "$out"
cat "$out"
