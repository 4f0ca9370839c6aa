#!/usr/bin/env bash
# Logs as typed tables (docs/benchmarks/logtime.md): two 100 MB+ logs made from the shared
# corpus, archived, and queried by time range beside DuckDB over the same lines; every corpus
# log archived beside an older glyd (OLD=path/to/glyd, optional).
# Usage: bash benches/logtime.sh [WORKDIR]   (needs a release build with SQL, DuckDB from pip)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-${TMPDIR:-/tmp}/glyd-logtime}"
python3 -c 'import duckdb' 2>/dev/null || pip install -q duckdb >&2
cargo build --release -p glyd-cli >&2
python3 benches/logtime.py target/release/glyd "$work" ${OLD:-}
