#!/usr/bin/env python3
"""Logs as typed tables, measured (docs/benchmarks/logtime.md; run by benches/logtime.sh).

1. Two 100 MB+ logs made from the shared corpus: Hadoop_2k.log (log4j, `2015-10-18
   18:01:47,978 INFO [main] ...`) and HDFS_2k.log (`081109 203615 148 INFO ...`), each
   concatenated with itself, every copy's times shifted past the previous copy's, in the
   layout's own spelling, and its other numbers (ids, ports, sizes) moved by the copy's
   number.
2. Their archives (`glyd -r`, default level), beside zstd -19 of the same bytes.
3. Time-range queries over the archive (`glyd sql`, whole process) beside DuckDB reading the
   same lines with `read_csv` and `strptime` (in process, so DuckDB's times include no process
   start; the hour is the one in the middle of the log's times): the results must be equal
   (DuckDB splits at `\r` too, so its empty lines are left out); medians of 5 runs. `EXPLAIN ANALYZE` gives the row
   groups the time range kept.
4. Every corpus log: its archive by this glyd beside one by an older glyd (OLD), if given:
   the typed time and level must not cost more than 1%.

Usage: logtime.py GLYD WORKDIR [OLD]
"""

import datetime as dt
import os
import re
import statistics
import subprocess
import sys
import time

import duckdb

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpus", "loghub")
TARGET = int(os.environ.get("LOGTIME_MB", "100")) << 20


NUMBER = re.compile(rb"\d+")


def shifted(src, pattern, parse, spell, out_path):
    """Writes copies of `src` until TARGET bytes, each copy's times moved past the last and
    every other number in its lines moved by the copy's number (so that a copy is new text
    with the same templates, not a repeat a compressor finds whole)."""
    lines = src.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    times = [parse(m.group(0)) for m in (pattern.match(l) for l in lines) if m]
    span = max(times) - min(times) + dt.timedelta(minutes=1)
    written, k = 0, 0
    with open(out_path, "wb") as f:
        while written < TARGET:
            shift = span * k
            for l in lines:
                m = pattern.match(l)
                rest = l[m.end():] if m else l
                rest = NUMBER.sub(lambda n: str(int(n.group(0)) + 7919 * k).encode(), rest) if k else rest
                if m:
                    l = spell(parse(m.group(0)) + shift) + rest
                else:
                    l = rest
                f.write(l + b"\n")
                written += len(l) + 1
            k += 1
    return out_path


LAYOUTS = {
    # name: (corpus file, leading-time regex, parse, spell, DuckDB time expression, level)
    "hadoop": (
        "Hadoop_2k.log",
        re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"),
        lambda b: dt.datetime.strptime(b.decode(), "%Y-%m-%d %H:%M:%S,%f"),
        lambda t: t.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3].encode(),
        "strptime(substr(line, 1, 23), '%Y-%m-%d %H:%M:%S,%g')",
        "split_part(line, ' ', 3)",
    ),
    "hdfs": (
        "HDFS_2k.log",
        re.compile(rb"\d{6} \d{6}"),
        lambda b: dt.datetime.strptime(b.decode(), "%y%m%d %H%M%S"),
        lambda t: t.strftime("%y%m%d %H%M%S").encode(),
        "strptime(substr(line, 1, 13), '%y%m%d %H%M%S')",
        "split_part(line, ' ', 4)",
    ),
}


def median_time(run, n=5):
    times, result = [], None
    for _ in range(n):
        t = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def glyd_sql(glyd, sql, archive):
    out = subprocess.run([glyd, "sql", "--format", "csv", sql, archive], check=True,
                         capture_output=True).stdout.decode()
    return [tuple(r.split(",")) for r in out.strip().split("\n")[1:]]


def duck_rows(con, sql):
    return [tuple("" if v is None else str(v) for v in r) for r in con.execute(sql).fetchall()]


def main():
    glyd, work = sys.argv[1], sys.argv[2]
    old = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(work, exist_ok=True)
    print(f"glyd: {glyd}; DuckDB {duckdb.__version__}; {os.cpu_count()} cores\n")
    print("| log | lines | bytes | archive | ratio | zstd -19 | archive / zstd -19 | write s "
          "| archive before | now / before |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    queries = []
    for name, (file, pattern, parse, spell, duck_time, duck_level) in LAYOUTS.items():
        src = open(os.path.join(CORPUS, file), "rb").read()
        log = shifted(src, pattern, parse, spell, os.path.join(work, f"{name}.log"))
        archive = log + ".glyd"
        t = time.perf_counter()
        subprocess.run([glyd, "-r", "-q", "-f", "-o", archive, log], check=True)
        write = time.perf_counter() - t
        zst = subprocess.run(["zstd", "-19", "-T0", "-c", "-q", log], check=True,
                             capture_output=True).stdout
        size, asize = os.path.getsize(log), os.path.getsize(archive)
        lines = sum(1 for _ in open(log, "rb"))
        before = ""
        if old:
            subprocess.run([old, "-r", "-q", "-f", "-o", log + ".old.glyd", log], check=True)
            b = os.path.getsize(log + ".old.glyd")
            before = f"{b:,} | {asize / b:.4f}"
        print(f"| {name} | {lines:,} | {size:,} | {asize:,} | {size / asize:.1f}x | {len(zst):,} "
              f"| {asize / len(zst):.3f} | {write:.2f} | {before} |")
        queries.append((name, log, archive, duck_time, duck_level))

    print("\n| log | query | glyd s | DuckDB s | DuckDB / glyd | row groups kept | rows |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, log, archive, duck_time, duck_level in queries:
        table = os.path.basename(archive).split(".")[0]
        con = duckdb.connect()
        con.execute(
            f"CREATE VIEW lines AS SELECT line FROM read_csv('{log}', columns={{'line': 'VARCHAR'}}, "
            "delim=chr(1), header=false, quote='', escape='', new_line='\\n', strict_mode=false, "
            "auto_detect=false)")
        con.execute(f"CREATE VIEW logs AS SELECT try_cast({duck_time} AS TIMESTAMP) AS time, "
                    f"{duck_level} AS level FROM lines WHERE line IS NOT NULL AND line <> ''")
        first, last = duck_rows(con, "SELECT min(time), max(time) FROM logs")[0]
        middle = dt.datetime.fromisoformat(first) + (
            dt.datetime.fromisoformat(last) - dt.datetime.fromisoformat(first)) / 2
        lo = middle.replace(minute=0, second=0, microsecond=0)
        hi = lo + dt.timedelta(hours=1)
        where = f"time >= TIMESTAMP '{lo}' AND time < TIMESTAMP '{hi}'"
        for label, q in [
            ("count(*) in one hour", f"SELECT count(*) FROM {{t}} WHERE {where}"),
            ("count(*) by level in one hour",
             f"SELECT level, count(*) FROM {{t}} WHERE {where} GROUP BY level ORDER BY level"),
            ("min/max time by level, all rows",
             "SELECT level, min(time), max(time), count(*) FROM {t} GROUP BY level ORDER BY level"),
        ]:
            g_time, g_rows = median_time(lambda: glyd_sql(glyd, q.replace("{t}", table), archive))
            d_time, d_rows = median_time(lambda: duck_rows(con, q.replace("{t}", "logs")))
            norm = lambda rows: [tuple(v.replace("T", " ").rstrip("0").rstrip(".") for v in r) for r in rows]
            if norm(g_rows) != norm(d_rows):
                sys.exit(f"{name} {label}: glyd {g_rows[:5]} != DuckDB {d_rows[:5]}")
            explain = subprocess.run(
                [glyd, "sql", "--format", "csv", "EXPLAIN ANALYZE " + q.replace("{t}", table), archive],
                check=True, capture_output=True).stdout.decode()
            kept = re.search(r"row_groups=(\d+) of (\d+)", explain)
            print(f"| {name} | {label} | {g_time:.3f} | {d_time:.3f} | {d_time / g_time:.1f}x "
                  f"| {kept.group(1)} of {kept.group(2)} | {len(g_rows)} |")

    print("\n| corpus log | archive before | archive now | now / before | columns now |")
    print("|---|---:|---:|---:|---|")
    before_all = now_all = 0
    for file in sorted(os.listdir(CORPUS)):
        if not file.endswith(".log"):
            continue
        path = os.path.join(CORPUS, file)
        now = os.path.join(work, file + ".glyd")
        subprocess.run([glyd, "-r", "-q", "-f", "-o", now, path], check=True)
        rebuilt = subprocess.run([glyd, "-dc", now], check=True, capture_output=True).stdout
        assert rebuilt == open(path, "rb").read(), file
        cols = subprocess.run([glyd, "inspect", now], check=True, capture_output=True).stdout.decode()
        names = [l.split()[0] for l in cols.split("column", 1)[1].split("\n")[1:] if l.strip()]
        n = os.path.getsize(now)
        b = ""
        if old:
            before = os.path.join(work, file + ".old.glyd")
            subprocess.run([old, "-r", "-q", "-f", "-o", before, path], check=True)
            b = os.path.getsize(before)
            before_all += b
        now_all += n
        ratio = f"{n / b:.4f}" if b else ""
        print(f"| {file} | {b:,} | {n:,} | {ratio} | {' '.join(names)} |" if b else
              f"| {file} | | {n:,} | | {' '.join(names)} |")
    if old:
        print(f"| all | {before_all:,} | {now_all:,} | {now_all / before_all:.4f} | |")


if __name__ == "__main__":
    main()
