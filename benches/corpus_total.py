#!/usr/bin/env python3
"""The whole corpus from the class tables of `docs/benchmarks/levels.md`: per codec (one
thread), the bytes of all classes over the bytes each codec wrote, and the speeds as all
classes' bytes over the sum of their median times. The issue's bars are stated over the whole
corpus; the class tables are what `glyd -b` and `benches/glyd_peer.py` measured.

    python3 benches/corpus_total.py LEVELS_MD CLASS_BYTES...

CLASS_BYTES are the input bytes of each class, in the order the classes appear.
"""
import sys


def class_tables(lines):
    """Per class (a `## ` heading), the one-thread rows of its tables: codec -> (ratio,
    compress MB/s, decompress MB/s)."""
    classes = []
    for line in lines:
        if line.startswith("## "):
            classes.append({})
        elif classes and line.startswith("| ") and not line.startswith("| codec"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 5 and cells[1] == "1":
                codec, _, ratio, comp, decomp = cells
                classes[-1][codec] = (float(ratio), float(comp), float(decomp))
    return classes


def main(argv):
    path, sizes = argv[0], [int(s) for s in argv[1:]]
    with open(path) as f:
        classes = class_tables(f.read().splitlines())
    if len(classes) != len(sizes):
        sys.exit(f"{len(classes)} classes in {path}, {len(sizes)} sizes given")
    codecs = [c for c in classes[0] if all(c in k for k in classes)]
    total = sum(sizes)
    rows = {}
    for codec in codecs:
        out = comp = decomp = 0.0
        for size, k in zip(sizes, classes):
            ratio, c, d = k[codec]
            out += size / ratio
            # A class table rounds speeds to whole MB/s: one under 1 MB/s reads 0.
            comp += size / (max(c, 0.5) * 1e6)
            decomp += size / (d * 1e6)
        rows[codec] = (total / out, total / comp / 1e6, total / decomp / 1e6)
    print(f"## Whole corpus ({len(sizes)} classes, {total / 1e6:.1f} MB)")
    print()
    print("Computed by `benches/corpus_total.py` from the class tables above: ratio = all input")
    print("bytes / all output bytes; speed = all input bytes / the sum of the class median times")
    print("(from speeds rounded to whole MB/s: the slowest compress figures are approximate).")
    print()
    print("| codec | threads | ratio | compress MB/s | decompress MB/s |")
    print("|---|---:|---:|---:|---:|")
    for codec, (r, c, d) in rows.items():
        print(f"| {codec} | 1 | {r:.3f} | {c:.0f} | {d:.0f} |")
    print()
    for ours, peer in [("glyd --max", "zstd -3"), ("glyd --ultra", "zstd -19")]:
        if ours in rows and peer in rows:
            (r, c, d), (pr, pc, pd) = rows[ours], rows[peer]
            print(
                f"  {ours[5:]} vs {peer}, 1 thread: ratio {r / pr:.3f}x, decode {d / pd:.2f}x, "
                f"compress {c / pc:.2f}x"
            )
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
