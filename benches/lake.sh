#!/usr/bin/env bash
# Queries over a lake on an S3 API server, glyd beside Parquet, committed as
# docs/benchmarks/lake.md: TPC-H lineitem (scale 0.1, tpchgen-cli) and a log (the corpus'
# HDFS_2k.log, 20 times over) as glyd archives and as Parquet zstd(3) on moto_server, read by
# DataFusion through one counting store (cli/examples/lake_bench.rs): requests, bytes fetched
# and times of Q1, Q6 and a selective log query; then the same queries as whole `glyd sql`
# processes, on one node and on a Ballista cluster (glyd cluster) of 1 and 2 executors.
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
cluster_pids=()
trap 'kill $moto "${cluster_pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 20); do cat ../shared/corpus/loghub/HDFS_2k.log; done > "$tmp/logs.log"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" >"$tmp/moto.log" 2>&1 &
moto=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port" && break; sleep 0.2; done
curl -s -X PUT -o /dev/null "http://127.0.0.1:$port/bench"
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
glyd=target/release/glyd
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Median wall seconds of $runs runs of a command (its output checked against $tmp/want).
median_s() {
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" > "$tmp/got"
    t1=$(date +%s.%N)
    cmp -s "$tmp/got" "$tmp/want" || { echo "different results: $*" >&2; diff "$tmp/want" "$tmp/got" >&2; exit 1; }
    times+=("$(echo "$t1 - $t0" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

# A scheduler and N executors (glyd cluster), killed by stop_cluster.
start_cluster() {
  local n=$1
  sched=$(free_port)
  cluster_pids=()
  $glyd cluster scheduler --bind "127.0.0.1:$sched" 2>"$tmp/scheduler.log" &
  cluster_pids+=($!)
  for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$sched") 2>/dev/null && break; sleep 0.1; done
  for e in $(seq "$n"); do
    local flight grpc
    flight=$(free_port); grpc=$(free_port)
    $glyd cluster executor --scheduler "127.0.0.1:$sched" --flight-port "$flight" \
      --grpc-port "$grpc" --work-dir "$tmp/executor-$e" 2>"$tmp/executor-$e.log" &
    cluster_pids+=($!)
    for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$flight") 2>/dev/null && break; sleep 0.1; done
  done
}
stop_cluster() { kill "${cluster_pids[@]}" 2>/dev/null; wait "${cluster_pids[@]}" 2>/dev/null || true; }

# The same queries as whole `glyd sql` processes: one node, then on Ballista with 1 and 2
# executors (each executor runs one task per core).
cluster_section() {
  echo
  echo "## On a Ballista cluster"
  echo
  echo "The same archives queried by whole processes: \`glyd sql\` on one node, and \`glyd sql"
  echo "--cluster\` against \`glyd cluster scheduler\` with 1 and 2 \`glyd cluster executor\`s"
  echo "(all on this machine, sharing its $(nproc) cores with moto). Seconds are the median of"
  echo "$runs runs of the whole command (start, opening the archives, planning, the query);"
  echo "every run's output is compared with one-node \`glyd sql\`'s."
  echo
  echo "| query | one node s | 1 executor s | 2 executors s | 1 executor: archive MB/s |"
  echo "|---|---:|---:|---:|---:|"
  local q1 q6 lq
  q1=$(target/release/examples/lake_bench --print-query q1)
  q6=$(target/release/examples/lake_bench --print-query q6)
  lq=$(target/release/examples/lake_bench --print-query logs)
  declare -A one c1 c2
  local labels=("TPC-H Q1" "TPC-H Q6" "logs: level = 'WARN'")
  local queries=("$q1" "$q6" "$lq")
  local tables=(lineitem lineitem logs)
  for i in 0 1 2; do
    $glyd sql --format csv "${queries[$i]}" -t "${tables[$i]}=s3://bench/${tables[$i]}.glyd" > "$tmp/want"
    cp "$tmp/want" "$tmp/want-$i"
    one[$i]=$(median_s $glyd sql --format csv "${queries[$i]}" -t "${tables[$i]}=s3://bench/${tables[$i]}.glyd")
  done
  for n in 1 2; do
    start_cluster "$n"
    for i in 0 1 2; do
      cp "$tmp/want-$i" "$tmp/want"
      t=$(median_s $glyd sql --format csv --cluster "df://127.0.0.1:$sched" "${queries[$i]}" \
        -t "${tables[$i]}=s3://bench/${tables[$i]}.glyd")
      if [ "$n" = 1 ]; then c1[$i]=$t; else c2[$i]=$t; fi
    done
    stop_cluster
  done
  for i in 0 1 2; do
    local size
    size=$(curl -sI "http://127.0.0.1:$port/bench/${tables[$i]}.glyd" | awk 'tolower($1)=="content-length:" {print $2+0}')
    echo "| ${labels[$i]} | ${one[$i]} | ${c1[$i]} | ${c2[$i]} | $(python3 -c "print(f'{$size / ${c1[$i]} / 1e6:.1f}')") |"
  done
  echo
  echo "What scales: a query's partitions are archives and byte ranges of archives (row groups"
  echo "by the range they start in), so executors on other machines each fetch and decode their"
  echo "share of the lake, and the archive MB/s per executor adds up until the store or the"
  echo "final aggregation limits it. What does not, here: the executors, the scheduler, moto and"
  echo "the client share $(nproc) cores, so a second executor only adds scheduling and shuffle"
  echo "work; and every \`--cluster\` run pays Ballista's job submission and polling, which a"
  echo "one-node query does not."
}

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
  cluster_section
} > "$tmp/lake.md"
mv "$tmp/lake.md" "$out"
cat "$out"
