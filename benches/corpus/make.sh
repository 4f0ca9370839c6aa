#!/usr/bin/env bash
# Builds the large benchmark inputs that are not stored in the repo, into a cache folder
# (default ~/.cache/glyd-corpus, or $GLYD_CORPUS):
#   lineitem.csv   TPC-H lineitem at scale 0.1, from tpchgen-cli (installed with cargo if missing)
#   orders.csv     TPC-H orders at scale 0.1
#   lineitem.jsonl, orders.jsonl   the same rows as JSON lines (to_jsonl.py)
#   sakila-inserts-{pg,mysql}.sql  the sakila COPY dump as INSERT lines (copy_to_inserts.py)
#   linux-64M.tar  the first 64 MiB of Debian's linux-source-6.1 tarball (apt-get if missing)
# Prints the cache folder. Safe to rerun: existing files are kept.
set -euo pipefail
out=${GLYD_CORPUS:-$HOME/.cache/glyd-corpus}
mkdir -p "$out"

for table in lineitem orders; do
  if [ ! -s "$out/$table.csv" ]; then
    command -v tpchgen-cli >/dev/null || cargo install tpchgen-cli --locked >&2
    tmp=$(mktemp -d)
    tpchgen-cli csv -s 0.1 --tables=$table --output-dir="$tmp" >&2
    mv "$tmp/$table.csv" "$out/$table.csv.part" && mv "$out/$table.csv.part" "$out/$table.csv"
    rm -rf "$tmp"
  fi
  if [ ! -s "$out/$table.jsonl" ]; then
    python3 "$(dirname "$0")/to_jsonl.py" "$out/$table.csv" "$out/$table.jsonl.part"
    mv "$out/$table.jsonl.part" "$out/$table.jsonl"
  fi
done

# The sakila COPY dump as INSERT statements, PostgreSQL and MySQL style.
sakila="$(dirname "$0")/../../../shared/corpus/sakila/postgres-sakila-insert-data-using-copy.sql"
for flavor in pg mysql; do
  if [ ! -s "$out/sakila-inserts-$flavor.sql" ] && [ -f "$sakila" ]; then
    rows=$([ $flavor = pg ] && echo 1 || echo 100)
    python3 "$(dirname "$0")/copy_to_inserts.py" "$sakila" $rows $flavor > "$out/sakila-inserts-$flavor.sql.part"
    mv "$out/sakila-inserts-$flavor.sql.part" "$out/sakila-inserts-$flavor.sql"
  fi
done

if [ ! -s "$out/linux-64M.tar" ]; then
  src=/usr/src/linux-source-6.1.tar.xz
  if [ ! -f "$src" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-source-6.1) >&2
  fi
  # head closes the pipe early; xz's SIGPIPE is expected.
  (xz -dc "$src" || true) | head -c $((64 << 20)) > "$out/linux-64M.tar.part"
  mv "$out/linux-64M.tar.part" "$out/linux-64M.tar"
fi
echo "$out"
