"""Events for benches/sink.sh: the loghub systems of the shared corpus as the JSON events a
log shipper sends (a few hundred bytes each): `@timestamp`, `host`, `service`, `level`, the
system's own parsed fields, and `message`, in the order the lines were logged, systems
interleaved. Copies past the first move every number in the event by the copy's index (and
the times forward), so each copy is new text with the same structure, as a longer log of
the same services would be.

Usage: python3 sink_events.py CORPUS_LOGHUB_DIR OUT.ndjson BYTES
"""
import csv
import json
import re
import sys
from datetime import datetime, timedelta, timezone

NUMBER = re.compile(r"\d+")
SKIP = {"LineId", "EventId", "EventTemplate", "Content", "Level", "Time", "Date", "Day"}


def events(corpus):
    systems = []
    for name in ["Android", "Apache", "BGL", "HDFS", "HPC", "Hadoop", "Linux", "OpenSSH",
                 "Spark", "Zookeeper"]:
        with open(f"{corpus}/{name}_2k.log_structured.csv", newline="", encoding="utf-8",
                  errors="replace") as f:
            systems.append((name, list(csv.DictReader(f))))
    start = datetime(2026, 12, 7, 9, 0, 0, tzinfo=timezone.utc)
    out = []
    for i in range(max(len(rows) for _, rows in systems)):
        for s, (name, rows) in enumerate(systems):
            if i >= len(rows):
                continue
            r = rows[i]
            e = {
                "@timestamp": (start + timedelta(milliseconds=37 * (i * 10 + s))).isoformat(
                    timespec="milliseconds").replace("+00:00", "Z"),
                "host": f"{name.lower()}-{(i * 7 + s) % 5:02d}",
                "service": name.lower(),
                "level": (r.get("Level") or "INFO").upper(),
            }
            for k, v in r.items():
                if k not in SKIP and v:
                    e[k.lower()] = v
            e["message"] = r["Content"]
            out.append(e)
    return out


def main():
    corpus, path, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = events(corpus)
    span = timedelta(milliseconds=37 * 10 * 2000)
    written, copy = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < want:
            for e in base:
                if copy:
                    e = {k: NUMBER.sub(lambda m: str(int(m.group()) + copy), v)
                         if k not in ("@timestamp", "level") else v for k, v in e.items()}
                    t = datetime.fromisoformat(e["@timestamp"].replace("Z", "+00:00"))
                    e["@timestamp"] = (t + copy * span).isoformat(
                        timespec="milliseconds").replace("+00:00", "Z")
                line = json.dumps(e, ensure_ascii=False) + "\n"
                f.write(line)
                written += len(line.encode())
                if written >= want:
                    break
            copy += 1


if __name__ == "__main__":
    main()
