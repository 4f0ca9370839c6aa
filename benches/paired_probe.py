"""Paired speed probe of two glyd binaries on one machine, for changes that must not change
speed (a refactor): each case runs old and new alternately, on one thread, and reports the
median of each and their ratio. Both binaries must write the same archive bytes, checked
first. Inputs: a generated lineitem-like file (400,000 rows, 41 MB), the loghub logs and the
loghub CSVs concatenated, the sakila COPY dump.

    python3 benches/paired_probe.py OLD_GLYD NEW_GLYD [RUNS]

Build each binary at its commit with `cargo build --release -p glyd-cli --no-default-features`,
and stop other work on the machine while this runs.
"""
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpus")


def inputs(d):
    r = random.Random(7)
    with open(os.path.join(d, "li.csv"), "w") as f:
        for i in range(400_000):
            f.write(
                "%d|%d|%d|%d|%d.%02d|0.0%d|0.0%d|N|O|1996-%02d-%02d|1996-%02d-%02d|NONE|TRUCK|carefully final packages %d\n"
                % (i // 4, r.randrange(200000), r.randrange(10000), i % 7 + 1, r.randrange(1, 50),
                   r.randrange(100000), r.randrange(10), r.randrange(9), r.randrange(1, 13),
                   r.randrange(1, 29), r.randrange(1, 13), r.randrange(1, 29), r.randrange(1000)))
    loghub = os.path.join(CORPUS, "loghub")
    for name, suffix in (("logs.txt", ".log"), ("csvs.txt", ".csv")):
        with open(os.path.join(d, name), "wb") as out:
            for f in sorted(os.listdir(loghub)):
                if f.endswith(suffix):
                    out.write(open(os.path.join(loghub, f), "rb").read())
    sakila = os.path.join(CORPUS, "sakila", "postgres-sakila-insert-data-using-copy.sql")
    with open(os.path.join(d, "sakila.sql"), "wb") as out:
        out.write(open(sakila, "rb").read())
    return ["li.csv", "logs.txt", "csvs.txt", "sakila.sql"]


def timed(cmd):
    s = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - s


def main(old, new, runs):
    with tempfile.TemporaryDirectory() as d:
        print(f"| case | old median (ms) | new median (ms) | new/old |")
        print(f"|---|---:|---:|---:|")
        for f in inputs(d):
            src = os.path.join(d, f)
            for mode in ("--max", "-r"):
                a, b = os.path.join(d, "a.glyd"), os.path.join(d, "b.glyd")
                subprocess.run([old, "-q", "-f", "-T1", mode, "-o", a, src], check=True)
                subprocess.run([new, "-q", "-f", "-T1", mode, "-o", b, src], check=True)
                if open(a, "rb").read() != open(b, "rb").read():
                    print(f"DIFFERENT BYTES: {f} {mode}")
                cases = [
                    (f"decode {mode} {f}", ["-dc", "-T1", b]),
                    (f"compress {mode} {f}", ["-q", "-f", "-T1", mode, "-o", os.path.join(d, "x.glyd"), src]),
                ]
                for name, args in cases:
                    t = {old: [], new: []}
                    for i in range(runs):
                        for exe in (old, new) if i % 2 == 0 else (new, old):
                            t[exe].append(timed([exe] + args))
                    o, n = statistics.median(t[old]), statistics.median(t[new])
                    print(f"| {name} | {o * 1000:.1f} | {n * 1000:.1f} | {n / o:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 11)
