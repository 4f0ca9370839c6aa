#!/usr/bin/env bash
# The side-by-side benchmark: every glyd level beside zstd and lz4 (C and lz4_flex), in one
# process, on the same bytes, per input class, 1 thread and all threads; and, where it is
# installed (pip install glyd), the published Glyd codec's max and ultra levels on the same
# files. Writes docs/benchmarks/levels.md with the machine, the commands, the tables and the
# whole corpus's totals (benches/corpus_total.py).
#
#   bash benches/run.sh            # all classes (builds the large inputs on first use)
#   RUNS=3 bash benches/run.sh     # fewer timed runs per measurement (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=../shared/corpus
runs=${RUNS:-5}
big=$(bash benches/corpus/make.sh)
# The published Glyd codec, a peer (its rows are left out where it cannot be installed).
python3 -c 'import glyd' 2>/dev/null || pip install -q glyd >&2 || true

# Without the sql feature: DataFusion under fat LTO would take most of an hour to build.
cargo build --profile bench -p glyd-cli --no-default-features >&2
glyd=target/release/glyd
[ -x target/bench/glyd ] && glyd=target/bench/glyd

out=docs/benchmarks/levels.md
tmp=$(mktemp)
{
  echo "# glyd's levels beside lz4, zstd and the published Glyd codec"
  echo
  echo "Produced by \`bash benches/run.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB. glyd built with the \`bench\` profile (fat LTO)."
  echo
  echo "Every codec runs in the same process on the same bytes (\`glyd -b\`); each output is decoded"
  echo "and compared with the input before timing. In each round of timed runs, a glyd level's"
  echo "peer (lz4 for --fast and --lz, zstd -3 for --max, zstd -19 for --ultra) runs right after it,"
  echo "so a pair's samples see the same machine. Speeds are medians of $runs timed runs, in MB/s"
  echo "(10^6 bytes of uncompressed data per second). lz4 (C) is liblz4's block API with no"
  echo "checksum; glyd's decode includes verifying every block's XXH3 checksum. Class totals add"
  echo "up sizes and median times over the files of the class. The published Glyd codec runs"
  echo "from Python (\`benches/glyd_peer.py\`) right after, on the same files: its ratios compare"
  echo "exactly; its speeds come from another process a moment later."
  echo
  sizes=()
  run() {
    local title=$1; shift
    sizes+=("$(cat "$@" | wc -c)")
    echo "## $title"
    echo
    echo "\`glyd -b --markdown --bench-runs $runs -T 2 $*\`" | sed "s|$big|\$CACHE|g; s|$corpus|corpus|g"
    echo
    "$glyd" -b --markdown --bench-runs "$runs" -T 2 "$@"
    if python3 -c 'import glyd' 2>/dev/null; then
      echo "\`python3 benches/glyd_peer.py --runs $runs $*\`" | sed "s|$big|\$CACHE|g; s|$corpus|corpus|g"
      echo
      python3 benches/glyd_peer.py --runs "$runs" "$@"
    fi
  }
  run "Logs (loghub, 10 files)" $corpus/loghub/*.log
  run "CSV (loghub structured, 10 files)" $corpus/loghub/*_structured.csv
  run "SQL (sakila PostgreSQL dump)" $corpus/sakila/*.sql
  run "TPC-H lineitem CSV, scale 0.1" "$big/lineitem.csv"
  run "Linux source tar, first 64 MiB" "$big/linux-64M.tar"
} > "$tmp"
# The issue's bars are over the whole corpus: totals from the class tables.
python3 benches/corpus_total.py "$tmp" "${sizes[@]}" >> "$tmp"
mv "$tmp" "$out"
echo "wrote $out" >&2
