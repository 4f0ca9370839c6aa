#!/usr/bin/env python3
"""The published Glyd codec (`pip install glyd`, Python over its C library) as a peer: its
`max` and `ultra` levels on the same files, one thread, each output decoded and compared
with the input before timing. Prints a Markdown table like `glyd -b --markdown`: ratio, and
compress / decompress MB/s (10^6 uncompressed bytes per second, median of RUNS timed runs),
totals over all files given.

    python3 benches/glyd_peer.py [--runs N] FILE...
"""
import statistics
import sys
import time


def timed(f, runs):
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        n = 0
        while True:
            f()
            n += 1
            if time.perf_counter() - t >= 0.05:
                break
        samples.append((time.perf_counter() - t) / n)
    return statistics.median(samples)


def main(argv):
    runs = 5
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    try:
        import glyd
    except ImportError:
        print("glyd (the published codec) is not installed: pip install glyd", file=sys.stderr)
        return 1
    datas = [open(p, "rb").read() for p in argv]
    print(f"Published Glyd codec {glyd.version() if callable(getattr(glyd, 'version', None)) else ''}"
          f" (Python bindings over its C library), 1 thread, same files.\n")
    print("| codec | threads | ratio | compress MB/s | decompress MB/s |")
    print("|---|---:|---:|---:|---:|")
    for level in ["max", "ultra"]:
        size = packed = 0
        ctime = dtime = 0.0
        for d in datas:
            c = glyd.compress(d, level=level, threads=1)
            if glyd.decompress(c) != d:
                print(f"Glyd {level} did not round-trip", file=sys.stderr)
                return 1
            slow = runs if len(d) < (8 << 20) or level == "max" else min(runs, 3)
            ctime += timed(lambda: glyd.compress(d, level=level, threads=1), slow)
            dtime += timed(lambda: glyd.decompress(c), slow)
            size += len(d)
            packed += len(c)
        print(f"| Glyd (published) {level} | 1 | {size / packed:.3f} | "
              f"{size / ctime / 1e6:.0f} | {size / dtime / 1e6:.0f} |")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
