#!/usr/bin/env bash
# Record mode's numbers, committed as docs/benchmarks/records.md: sizes beside zstd -19, the
# published Glyd codec (records) and Parquet on the loghub logs and CSVs, the sakila COPY dump
# and TPC-H lineitem and orders (CSV and JSON lines); then `glyd -b -r` speeds on lineitem (1 and all threads, with reading two
# columns as Arrow beside a full rebuild).
#
#   bash benches/records.sh            # RUNS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=../shared/corpus
runs=${RUNS:-3}
big=$(bash benches/corpus/make.sh)
python3 -c 'import glyd' 2>/dev/null || pip install -q glyd >&2 || true
python3 -c 'import pyarrow' 2>/dev/null || pip install -q pyarrow >&2 || true

# Without the sql feature: DataFusion under fat LTO would take most of an hour to build.
cargo build --profile bench -p glyd-cli --no-default-features >&2
# The bench profile builds into target/release.
glyd=target/release/glyd
[ -x target/bench/glyd ] && glyd=target/bench/glyd

out=docs/benchmarks/records.md
tmp=$(mktemp)
{
  echo "# Record mode beside zstd, the published Glyd codec and Parquet"
  echo
  echo "Produced by \`bash benches/records.sh\` (RUNS=$runs) at commit $(git rev-parse --short HEAD)"
  echo "on $(date -u +%Y-%m-%d). Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs),"
  echo "$(nproc) cores. glyd built with the \`bench\` profile; \`glyd -r\` at its default level (\`--max\`)."
  echo
  echo "## Sizes"
  echo
  echo "\`python3 benches/records.py\` on the same files: every archive is rebuilt with \`glyd -d\`"
  echo "and compared with its input first. zstd is the CLI ($(zstd --version | head -1)); Glyd is"
  echo "\`glyd.compress(data, level=\"max\", records=True)\` (pip package $(python3 -c 'import importlib.metadata as m; print(m.version("glyd"))' 2>/dev/null || echo 'not installed'));"
  echo "Parquet is pyarrow $(python3 -c 'import pyarrow; print(pyarrow.__version__)' 2>/dev/null || echo '(not installed)') with zstd level 3, from its default CSV or JSON type inference."
  echo
  python3 benches/records.py --glyd "$glyd" \
    --group "loghub logs" $corpus/loghub/*.log \
    --group "loghub CSVs" $corpus/loghub/*.csv \
    --group "sakila COPY dump" $corpus/sakila/postgres-sakila-insert-data-using-copy.sql \
    --group "sakila as INSERT lines" "$big/sakila-inserts-pg.sql" "$big/sakila-inserts-mysql.sql" \
    --group "TPC-H lineitem CSV" "$big/lineitem.csv" \
    --group "TPC-H orders CSV" "$big/orders.csv" \
    --group "TPC-H JSON lines" "$big/lineitem.jsonl" "$big/orders.jsonl" | sed "s|$big/||"
  echo
  echo "## Speed on lineitem"
  echo
  echo "\`glyd -b -r --markdown --bench-runs $runs lineitem.csv\`: every codec in one process on the"
  echo "same bytes; MB/s of CSV per second, medians. Record mode's decompress is a full rebuild"
  echo "of the CSV; the last line reads the first two columns as Arrow arrays instead."
  echo
  "$glyd" -b -r --markdown --bench-runs "$runs" "$big/lineitem.csv" | sed "s|$big/||"
} > "$tmp"
mv "$tmp" "$out"
chmod 644 "$out"
echo "wrote $out" >&2
