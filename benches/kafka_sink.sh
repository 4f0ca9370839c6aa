#!/usr/bin/env bash
# The sink's Kafka source: consume-and-archive rate on one core beside a bare consume loop
# that discards (the sink's overhead), and the lake's bytes beside the same messages in Kafka
# batches compressed with zstd and lz4 (the topic's own storage, read from the Produce
# requests that carried them).
#
#   bash benches/kafka_sink.sh [BYTES] [PARTITIONS]     (default 96M of events, 32 partitions)
#
# Writes docs/benchmarks/kafka.md. The mock broker (librdkafka's, hosted by
# connectors/examples/kafka_load.rs) and the producers run on core 1; each consumer, the
# example's bare loop or `glyd sink --kafka`, runs alone on core 0, three times, each as a new
# group reading the topic from its start.
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${1:-100663296}
PARTS=${2:-32}
CORPUS=${GLYD_CORPUS:-../shared/corpus}/loghub
W=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $BROKER 2>/dev/null || true; rm -rf "$W"' EXIT

cargo build --release -q -p glyd-cli
cargo build --release -q -p glyd-connectors --example kafka_load
GLYD=target/release/glyd
K=target/release/examples/kafka_load
python3 benches/sink_events.py "$CORPUS" "$W/events.ndjson" "$BYTES"

mkfifo "$W/in"
taskset -c 1 $K broker "$PARTS" < "$W/in" > "$W/boot" &
BROKER=$!
exec 3> "$W/in"
for _ in $(seq 100); do [ -s "$W/boot" ] && break; sleep 0.1; done
BOOT=$(head -1 "$W/boot")
taskset -c 1 $K produce "$BOOT" "$W/events.ndjson" | tee "$W/produce"
MESSAGES=$(sed -n 's/^messages=\([0-9]*\) .*/\1/p' "$W/produce")
VALUE_BYTES=$(sed -n 's/^messages=[0-9]* bytes=\([0-9]*\)/\1/p' "$W/produce")
field() { sed -n "s/^topic=$1 .*$2=\([0-9]*\).*/\1/p" "$W/produce"; }
for t in plain zstd lz4; do
  [ "$(field $t held)" = "$MESSAGES" ] || { echo "topic $t keeps $(field $t held) of $MESSAGES messages: use more partitions" >&2; exit 1; }
done

for i in 1 2 3; do taskset -c 0 $K consume "$BOOT" plain "bare$i" | tee -a "$W/consume"; done
# The sink: `glyd sink --kafka` as a user runs it, alone on core 0; timed from its first
# message read (its /metrics, polled from core 1) to its exit after SIGTERM, once every message
# is read: by then every archive is written and its offsets committed.
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^"m"[{]" {s+=$2} END {print s+0}'; }
for i in 1 2 3; do
  rm -rf "$W/lake"
  taskset -c 0 $GLYD sink --kafka "$BOOT" --topic plain --group "glyd$i" --out "$W/lake" \
    --http 127.0.0.1:0 2> "$W/sink$i.log" &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$W/sink$i.log" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$W/sink$i.log" | head -1)
  until [ "$(taskset -c 1 bash -c "$(declare -f metric); metric $port glyd_sink_events_total")" -gt 0 ]; do sleep 0.01; done
  t0=$(date +%s.%N)
  until [ "$(taskset -c 1 bash -c "$(declare -f metric); metric $port glyd_sink_events_total")" -ge "$MESSAGES" ]; do sleep 0.02; done
  bytes=$(metric "$port" glyd_sink_bytes_in_total)
  kill -TERM $pid; wait $pid
  t1=$(date +%s.%N)
  s=$(echo "$t1 - $t0" | bc)
  # The archives are written at the stop (no partition reaches a cut): from SIGTERM to the
  # consumer's last line is building, syncing and committing them.
  a0=$(date -d "$(grep -m1 'SIGTERM' "$W/sink$i.log" | cut -c1-27)" +%s.%N)
  a1=$(date -d "$(grep -m1 'kafka consumer stopped' "$W/sink$i.log" | cut -c1-27)" +%s.%N)
  echo "archive run=$i bytes=$bytes seconds=$s archiving=$(echo "$a1 - $a0" | bc) mb_s=$(echo "scale=1; $bytes / $s / 1000000" | bc)" | tee -a "$W/archive"
done
median() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | sort -n | sed -n 2p; }
CONSUME=$(median mb_s < "$W/consume")
ARCHIVE=$(median mb_s < "$W/archive")
LAKE=$(find "$W/lake" -name '*.glyd' -printf '%s\n' | awk '{s+=$1} END {print s}')
ARCHIVES=$(find "$W/lake" -name '*.glyd' | wc -l)
for a in $(find "$W/lake" -name '*.glyd'); do $GLYD -t "$a"; done
CHECK=$($GLYD sql --format csv 'SELECT count(*), count(DISTINCT (partition, "offset")) FROM t' -t "t=$W/lake/plain" | tail -1)
[ "$CHECK" = "$MESSAGES,$MESSAGES" ] || { echo "the lake holds $CHECK rows, distinct offsets; produced $MESSAGES" >&2; exit 1; }
PLAIN=$(field plain produce_request_bytes); ZSTD=$(field zstd produce_request_bytes); LZ4=$(field lz4 produce_request_bytes)
ratio() { echo "scale=4; $1 / $2" | bc; }

cat > docs/benchmarks/kafka.md <<MD
# The sink's Kafka source: consume-and-archive rate and bytes beside Kafka's own batches

Produced by \`bash benches/kafka_sink.sh $BYTES $PARTS\` on $(date -u +%Y-%m-%d) (2 cores),
glyd built \`--release\` at $(git rev-parse --short HEAD); librdkafka $(grep -o 'rdkafka-sys [0-9.+]*' Cargo.lock 2>/dev/null || grep -A1 'name = "rdkafka-sys"' Cargo.lock | tail -1 | cut -d'"' -f2).

Messages: \`benches/sink_events.py\` events (the ten loghub systems as shipper JSON, see
[sink.md](sink.md)), one per message, keyed by their number mod 1000: $MESSAGES messages,
$VALUE_BYTES bytes of values, spread over $PARTS partitions of one mock broker (librdkafka's
mock cluster; it keeps 5 MiB of batches per partition, so the partitions are enough to keep
every message). Produced three times, to topics \`plain\`, \`zstd\` and \`lz4\`, each with
that \`compression.type\`, \`linger.ms=50\`, \`batch.size=1000000\`.

## Rate on one core

Each consumer runs alone on core 0 (broker on core 1), as a new group reading the whole
\`plain\` topic; MB/s of keys and values, from the first message read to the last read (the
bare loop) or to the sink's exit after SIGTERM once it has read the last (every archive
written and synced, every offset committed). Median of three runs.

| consumer | MB/s | / bare loop |
|---|---:|---:|
| bare consume loop (\`BaseConsumer::poll\`, discards) | $CONSUME | 1 |
| \`glyd sink --kafka\` (rows, archives, fsync, commit) | $ARCHIVE | $(ratio "$ARCHIVE" "$CONSUME") |

Runs: bare $(sed -n 's/.* mb_s=\([0-9.]*\).*/\1/p' "$W/consume" | paste -sd' '), sink $(sed -n 's/.* mb_s=\([0-9.]*\).*/\1/p' "$W/archive" | paste -sd' ') MB/s.
Of each sink run's seconds ($(sed -n 's/.* seconds=\([0-9.]*\) .*/\1/p' "$W/archive" | paste -sd' ')), building the
archives took $(sed -n 's/.* archiving=\([0-9.]*\) .*/\1/p' "$W/archive" | paste -sd' ') (no partition reaches a cut
here, so all of them are written after the last message is read): the record engine's
encoding, not the consumer, sets the rate.

## Bytes

| | bytes | lake / it |
|---|---:|---:|
| values as produced | $VALUE_BYTES | $(ratio "$LAKE" "$VALUE_BYTES") |
| Kafka batches, uncompressed | $PLAIN | $(ratio "$LAKE" "$PLAIN") |
| Kafka batches, \`compression.type=lz4\` | $LZ4 | $(ratio "$LAKE" "$LZ4") |
| Kafka batches, \`compression.type=zstd\` | $ZSTD | $(ratio "$LAKE" "$ZSTD") |
| glyd lake ($ARCHIVES archives, one run per partition) | $LAKE | 1 |

Batch bytes are the Produce requests that carried each topic's messages, from librdkafka's
statistics (\`txbytes\`; a request's framing is some 100 bytes beside batches of up to 1 MB).
The lake's archives hold the messages as rows (offset, timestamp, key, headers, the value's
keys as columns) and every one passes \`glyd -t\`; \`count(DISTINCT (partition, offset))\`
over the lake is $MESSAGES, every message once.
MD
cat docs/benchmarks/kafka.md
