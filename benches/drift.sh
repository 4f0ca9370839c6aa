#!/usr/bin/env bash
# JSON lines whose keys change, committed as docs/benchmarks/drift.md: a key that appears for
# good past the first MiB (drift.jsonl) and six log systems in one stream (six.jsonl, one
# after another; six-interleaved.jsonl, in turns), each beside the same events archived
# apart, zstd -19 and gzip -9 of the same bytes. Every archive is rebuilt and compared with
# its input, and `glyd sql` counts its rows.
#
#   bash benches/drift.sh                 # sizes
#   OLD=path/to/old/glyd bash benches/drift.sh   # and write/rebuild speed beside an older glyd
#
# Archive sizes do not depend on the build profile: the debug build (with SQL) is used; speeds
# use a release build (without SQL).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --bins >&2
glyd=$PWD/target/debug/glyd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 benches/corpus/drift.py ../shared/corpus/loghub "$work"

size() { stat -c %s "$1"; }
# Archives $1 (quietly) and checks the rebuild; prints the archive's size.
archive() {
  "$glyd" -r -q -f "$1" -o "$1.glyd"
  "$glyd" -dc "$1.glyd" | cmp -s - "$1" || { echo "rebuild of $1 differs" >&2; exit 1; }
  size "$1.glyd"
}
# The table's rows as `glyd sql` counts them.
rows() {
  "$glyd" sql "SELECT count(*) AS n FROM t" --table t="$1.glyd" 2>/dev/null | tail -1
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

out=docs/benchmarks/drift.md
{
  echo "# JSON lines whose keys change"
  echo
  echo "Produced by \`bash benches/drift.sh\` at commit $(git rev-parse --short HEAD) on $(date -u +%Y-%m-%d)."
  echo "Inputs from \`benches/corpus/drift.py\` (deterministic): \`drift.jsonl\` is 60,000 events"
  echo "\`{\"ts\",\"level\",\"msg\"}\` that carry a \`trace_id\` from event 40,000 on; \`six.jsonl\` is the"
  echo "structured rows of six loghub systems (Android, Apache, BGL, HDFS, HPC, Hadoop) as JSON"
  echo "events, 2,000 each, one system after another; \`six-interleaved.jsonl\` takes them in turns."
  echo "\"apart\" is the sum of the parts archived alone (the two halves of \`drift.jsonl\`; each"
  echo "system's events). Every archive is rebuilt with \`glyd -d\` and compared with its input;"
  echo "\"rows\" is \`SELECT count(*)\` over the archive. zstd is $(zstd --version | head -1 | sed 's/\*//g' | xargs)."
  echo
  echo "| file | bytes | rows | glyd -r | apart | zstd -19 | gzip -9 | vs apart | vs zstd -19 | vs gzip -9 |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for f in drift six six-interleaved; do
    src=$work/$f.jsonl
    g=$(archive "$src")
    if [ "$f" = drift ]; then
      parts="drift-before drift-after"
    else
      parts="Android Apache BGL HDFS HPC Hadoop"
    fi
    apart=0
    for p in $parts; do apart=$((apart + $(archive "$work/$p.jsonl"))); done
    z=$(zstd -19 -q -c "$src" | wc -c)
    gz=$(gzip -9 -c "$src" | wc -c)
    echo "| $f.jsonl | $(size "$src") | $(rows "$src") | $g | $apart | $z | $gz | $(ratio "$apart" "$g") | $(ratio "$z" "$g") | $(ratio "$gz" "$g") |"
  done
  echo
  echo "A JSON lines table grows a column when a key first appears (earlier rows NULL), and a row"
  echo "group ends where one long run of a key set gives way to another (at least 64 KiB of lines"
  echo "each side), so a stream whose sources come in batches codes each batch's columns as they"
  echo "would code alone. Sources interleaved event by event share row groups: their columns mix"
  echo "types and formats, and the archive is larger than the parts apart."
  if [ -n "${OLD:-}" ]; then
    cargo build -q --release -p glyd-cli --no-default-features >&2
    echo
    echo "## Speed"
    echo
    echo "\`python3 benches/drift_speed.py $OLD target/release/glyd DIR\` (one thread, medians of 7"
    echo "alternating runs, other work stopped), old = $("$OLD" --version), new = this commit:"
    echo
    python3 benches/drift_speed.py "$OLD" target/release/glyd "$work"
  fi
} > "$out"
cat "$out"
