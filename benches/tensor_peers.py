#!/usr/bin/env python3
"""Peers for tensor coding on the same safetensors file: ZipNN (pip install zipnn), the
published Glyd codec (pip install glyd; its general-purpose max and ultra levels: its tensor
coder, glyd[gpu], needs a CUDA device) and zstd -19 (the zstd Python module when present,
else the zstd CLI). Each output is decoded and compared with the input; speeds are medians of
RUNS timed runs on one thread. Prints a Markdown table: whole-file ratio, bits per value over
the file's float values, and compress / decompress GB/s.

    python3 benches/tensor_peers.py [--runs N] FILE.safetensors
"""
import json
import statistics
import struct
import subprocess
import sys
import time


def timed(f, runs):
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def float_values(data):
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    size = {"BF16": 2, "F16": 2, "F32": 4}
    total = 0
    for name, t in header.items():
        if name != "__metadata__" and t["dtype"] in size:
            total += (t["data_offsets"][1] - t["data_offsets"][0]) // size[t["dtype"]]
    return total, header


def row(label, data, values, comp, decomp, runs):
    c = comp(bytes(data))
    d = decomp(c)
    if bytes(d) != data:
        print(f"| {label} | round trip FAILED | | | |")
        return
    tc = timed(lambda: comp(bytes(data)), runs)
    td = timed(lambda: decomp(c), runs)
    print(f"| {label} | {len(data) / len(c):.3f} | {len(c) * 8 / values:.3f} | "
          f"{len(data) / tc / 1e9:.3f} | {len(data) / td / 1e9:.3f} |")


def main(argv):
    runs = 3
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    path = argv[0]
    data = open(path, "rb").read()
    values, header = float_values(data)
    dtypes = {t["dtype"] for k, t in header.items() if k != "__metadata__"}
    print("| codec | file ratio | bits/value | compress GB/s | decompress GB/s |")
    print("|---|---:|---:|---:|---:|")
    try:
        import zipnn
        dt = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[sorted(dtypes & {"BF16", "F16", "F32"})[0]]
        z = zipnn.ZipNN(bytearray_dtype=dt, input_format="byte", threads=1)
        # ZipNN reorders its input buffer in place: hand it a copy every time.
        row(f"ZipNN {zipnn.__version__ if hasattr(zipnn, '__version__') else ''} ({dt}, 1 thread)",
            data, values, lambda b: z.compress(bytearray(b)), z.decompress, runs)
    except ImportError:
        print("| ZipNN | not installed (pip install zipnn) | | | |")
    try:
        import glyd
        for level in ("max", "ultra"):
            row(f"Glyd (published {glyd.version()}) {level}", data, values,
                lambda b, l=level: glyd.compress(b, level=l), glyd.decompress, 1 if level == "ultra" else runs)
    except ImportError:
        print("| Glyd (published) | not installed (pip install glyd) | | | |")
    try:
        import zstandard
        cctx, dctx = zstandard.ZstdCompressor(level=19), zstandard.ZstdDecompressor()
        row("zstd -19", data, values, cctx.compress, dctx.decompress, 1)
    except ImportError:
        zc = lambda b: subprocess.run(["zstd", "-19", "-q", "-c"], input=b, capture_output=True, check=True).stdout
        zd = lambda b: subprocess.run(["zstd", "-d", "-q", "-c"], input=b, capture_output=True, check=True).stdout
        row("zstd -19 (CLI, process start included)", data, values, zc, zd, 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
