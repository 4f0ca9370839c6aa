#!/usr/bin/env bash
# The SHA-256 of every archive glyd writes for the shared corpus (each file at --fast, --lz,
# --max and --ultra, and in record mode at --max and --ultra), one line per archive. A change
# that must not change the format (a refactor) leaves this output identical:
#
#   bash benches/archive_hashes.sh > before.txt   # at the old commit
#   bash benches/archive_hashes.sh > after.txt    # at the new one
#   diff before.txt after.txt
#
# GLYD=path/to/glyd picks the binary (default: target/debug/glyd, built if missing; debug and
# release builds write the same bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${CORPUS:-../shared/corpus}
glyd=${GLYD:-target/debug/glyd}
[ -x "$glyd" ] || cargo build -q -p glyd-cli >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hash() { sha256sum < "$tmp/a.glyd" | cut -d' ' -f1; }
for f in "$corpus"/loghub/*.log "$corpus"/loghub/*.csv "$corpus"/sakila/*.sql; do
  for mode in --fast --lz --max --ultra "-r --max" "-r --ultra"; do
    # shellcheck disable=SC2086 # $mode is two words for record mode
    "$glyd" -q -f -T1 $mode -o "$tmp/a.glyd" "$f"
    printf '%s  %s %s\n' "$(hash)" "$mode" "${f#"$corpus"/}"
  done
done
# JSON lines (the loghub CSVs converted) and Parquet (Arrow tables) in record mode.
for f in "$corpus"/loghub/*.csv; do
  python3 benches/corpus/to_jsonl.py "$f" "$tmp/in.jsonl"
  "$glyd" -q -f -T1 -r -o "$tmp/a.glyd" "$tmp/in.jsonl"
  printf '%s  -r %s as JSON lines\n' "$(hash)" "${f#"$corpus"/}"
done
for f in "$corpus"/parquet-testing/*.parquet; do
  if "$glyd" -q -f -T1 -r --format parquet -o "$tmp/a.glyd" "$f" 2>/dev/null; then
    printf '%s  -r %s\n' "$(hash)" "${f#"$corpus"/}"
  else
    printf 'refused  -r %s\n' "${f#"$corpus"/}"
  fi
done
