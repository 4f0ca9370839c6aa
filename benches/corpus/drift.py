"""Writes the JSON lines inputs of benches/drift.sh into a folder:

  drift.jsonl            60,000 events {"ts","level","msg"}; from event 40,000 on each also has
                         a "trace_id" (a key that appears for good, past any sample)
  drift-before.jsonl, drift-after.jsonl   its two halves: before and after trace_id appears
  six.jsonl              the structured rows of six loghub systems as JSON events (to_jsonl.py),
                         one system after another: 12,000 events, each system its own keys
  six-interleaved.jsonl  the same events taken from the six in turns, one at a time
  <System>.jsonl         each system's events alone

    python3 drift.py LOGHUB_FOLDER OUT_FOLDER

Deterministic: the same bytes on every run.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from to_jsonl import main as csv_to_jsonl  # noqa: E402

SYSTEMS = ["Android", "Apache", "BGL", "HDFS", "HPC", "Hadoop"]


def drift(out):
    r = random.Random(35)
    users = [f"user{r.randrange(10**6)}" for _ in range(400)]
    paths = ["/api/orders", "/api/users", "/health", "/api/cart", "/login", "/static/app.js"]
    lines = []
    for i in range(60_000):
        ms = 1_733_000_000_000 + i * 37 + r.randrange(30)
        secs, milli = divmod(ms, 1000)
        ts = f"2024-12-{1 + secs // 86400 % 28:02d}T{secs // 3600 % 24:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{milli:03d}Z"
        level = r.choices(["INFO", "DEBUG", "WARN", "ERROR"], [70, 20, 8, 2])[0]
        kind = r.randrange(4)
        if kind == 0:
            msg = f"GET {r.choice(paths)} 200 {r.randrange(1, 900)}ms"
        elif kind == 1:
            msg = f"session opened for {r.choice(users)} from 10.{r.randrange(4)}.{r.randrange(256)}.{r.randrange(256)}"
        elif kind == 2:
            msg = f"cache miss for key order:{r.randrange(10**6)}"
        else:
            msg = f"worker {r.randrange(16)} finished batch {i // 100} in {r.randrange(10, 5000)}ms"
        line = f'{{"ts":"{ts}","level":"{level}","msg":"{msg}"'
        if i >= 40_000:
            line += f',"trace_id":"{r.getrandbits(128):032x}"'
        lines.append(line + "}\n")
    with open(os.path.join(out, "drift.jsonl"), "w") as f:
        f.writelines(lines)
    with open(os.path.join(out, "drift-before.jsonl"), "w") as f:
        f.writelines(lines[:40_000])
    with open(os.path.join(out, "drift-after.jsonl"), "w") as f:
        f.writelines(lines[40_000:])


def six(loghub, out):
    events = []
    for s in SYSTEMS:
        path = os.path.join(out, f"{s}.jsonl")
        csv_to_jsonl(os.path.join(loghub, f"{s}_2k.log_structured.csv"), path)
        with open(path) as f:
            events.append(f.readlines())
    with open(os.path.join(out, "six.jsonl"), "w") as f:
        for e in events:
            f.writelines(e)
    with open(os.path.join(out, "six-interleaved.jsonl"), "w") as f:
        for rows in zip(*events):
            f.writelines(rows)


if __name__ == "__main__":
    os.makedirs(sys.argv[2], exist_ok=True)
    drift(sys.argv[2])
    six(sys.argv[1], sys.argv[2])
