#!/usr/bin/env python3
"""Record mode beside its peers, on the same files: `glyd -r` (the default level) against
`zstd -19`, the published Glyd codec's `max` level with records (`pip install glyd`:
`glyd.compress(data, level="max", records=True)`) and, for CSV tables, Parquet with zstd
level 3 (pyarrow, read with its default CSV or JSON type inference). Every glyd archive is decoded
with `glyd -d` and compared with its input first. Prints Markdown: one row per file with
sizes and ratios, then geometric means of ours against each peer per group.

    python3 benches/records.py --glyd target/release/glyd --group NAME FILE... [--group ...]
"""
import math
import os
import subprocess
import sys


def run(cmd, data=None):
    return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout


def peer_glyd(data):
    try:
        import glyd  # the published codec
    except ImportError:
        return None
    return len(glyd.compress(data, level="max", records=True))


def parquet_zstd3(path):
    if not path.endswith((".csv", ".jsonl")):
        return None
    try:
        import pyarrow.csv as pc
        import pyarrow.json as pj
        import pyarrow.parquet as pq
    except ImportError:
        return None
    table = pc.read_csv(path) if path.endswith(".csv") else pj.read_json(path)
    out = path + ".bench.parquet"
    try:
        pq.write_table(table, out, compression="zstd", compression_level=3)
        return os.path.getsize(out)
    except Exception:
        return None
    finally:
        if os.path.exists(out):
            os.remove(out)


def main(argv):
    glyd = "target/release/glyd"
    groups = []
    i = 0
    while i < len(argv):
        if argv[i] == "--glyd":
            glyd = argv[i + 1]
            i += 2
        elif argv[i] == "--group":
            groups.append((argv[i + 1], []))
            i += 2
        else:
            groups[-1][1].append(argv[i])
            i += 1
    print("| file | bytes | glyd -r | zstd -19 | Glyd max+records | Parquet zstd(3) "
          "| vs zstd -19 | vs Glyd | vs Parquet |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    means = []
    for name, files in groups:
        logs = {"zstd": [], "glyd": [], "parquet": []}
        for path in files:
            data = open(path, "rb").read()
            ours = run([glyd, "-r", "-c", "-q", path])
            if run([glyd, "-d", "-c", "-q"], ours) != data:
                sys.exit(f"{path}: glyd -r did not round-trip")
            z = len(run(["zstd", "-19", "-c", "-q", path]))
            g = peer_glyd(data)
            p = parquet_zstd3(path)
            o = len(ours)
            cells = [os.path.basename(path), str(len(data)), str(o), str(z),
                     str(g) if g else "–", str(p) if p else "–",
                     f"{z / o:.3f}", f"{g / o:.3f}" if g else "–", f"{p / o:.3f}" if p else "–"]
            print("| " + " | ".join(cells) + " |")
            logs["zstd"].append(math.log(z / o))
            if g:
                logs["glyd"].append(math.log(g / o))
            if p:
                logs["parquet"].append(math.log(p / o))
        means.append((name, len(files), {k: math.exp(sum(v) / len(v)) for k, v in logs.items() if v}))
    print()
    print("Geometric means of the size ratio (peer bytes / glyd -r bytes; above 1 means glyd -r is smaller):")
    print()
    print("| group | files | vs zstd -19 | vs Glyd max+records | vs Parquet zstd(3) |")
    print("|---|---:|---:|---:|---:|")
    for name, n, m in means:
        cell = lambda k: f"{m[k]:.3f}" if k in m else "–"
        print(f"| {name} | {n} | {cell('zstd')} | {cell('glyd')} | {cell('parquet')} |")


if __name__ == "__main__":
    main(sys.argv[1:])
