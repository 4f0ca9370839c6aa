"""The glyd Python package beside its peers, one process, same bytes: tensor files (MiniLM bf16
and fp32) saved and loaded by glyd, safetensors, torch.save and ZipNN; the training example's
checkpoints; record archives read into pyarrow beside Parquet; glyd.compress beside the CLI.
Prints Markdown (benches/python.sh writes it to docs/benchmarks/python.md).

    python benches/python_bench.py tensors|rest MODELS_DIR LINEITEM_CSV GLYD_CLI

`tensors` runs one core (start it with RAYON_NUM_THREADS=1); `rest` runs on every core.
"""

import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.csv
import pyarrow.parquet as pq
import safetensors.torch
import torch
import zipnn

import glyd
import glyd.torch

RUNS = 5


def median_time(f, runs=RUNS):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tensor_files(models, tmp, one_core):
    rows = []
    for name in ("minilm-bf16", "minilm-f32"):
        src = os.path.join(models, f"{name}.safetensors")
        tensors = safetensors.torch.load_file(src)
        raw = sum(t.numel() * t.element_size() for t in tensors.values())
        dtype = "bfloat16" if "bf16" in name else "float32"
        threads = 1 if one_core else 0
        out = os.path.join(tmp, "t")

        def zipnn_save():
            z = zipnn.ZipNN(bytearray_dtype=dtype, threads=threads)
            with open(src, "rb") as f:
                data = f.read()
            with open(out + ".znn", "wb") as f:
                f.write(z.compress(data))

        def zipnn_load():
            z = zipnn.ZipNN(bytearray_dtype=dtype, threads=threads)
            with open(out + ".znn", "rb") as f:
                return safetensors.torch.load(bytes(z.decompress(f.read())))

        peers = [
            ("glyd", lambda: glyd.torch.save_file(tensors, out + ".glyd"), lambda: glyd.torch.load_file(out + ".glyd"), out + ".glyd"),
            ("safetensors", lambda: safetensors.torch.save_file(tensors, out + ".st"), lambda: safetensors.torch.load_file(out + ".st"), out + ".st"),
            ("torch.save", lambda: torch.save(tensors, out + ".pt"), lambda: torch.load(out + ".pt"), out + ".pt"),
            ("ZipNN", zipnn_save, zipnn_load, out + ".znn"),
        ]
        for peer, save, load, path in peers:
            save_s = median_time(save)
            size = os.path.getsize(path)
            load_s = median_time(load)
            got = load()
            same = all(torch.equal(got[k].view(-1).view(torch.uint8), v.view(-1).view(torch.uint8)) for k, v in tensors.items())
            assert same, f"{peer} did not load {name} back bit-exact"
            rows.append((name, peer, raw, size, save_s, load_s))
    return rows


def print_tensor_rows(rows):
    print("| model | file | bytes | × safetensors | save s | save GB/s | load s | load GB/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    st = {r[0]: r[3] for r in rows if r[1] == "safetensors"}
    for name, peer, raw, size, save_s, load_s in rows:
        b = "**" if peer == "glyd" else ""
        print(f"| {name} | {b}{peer}{b} | {size:,} | {size / st[name]:.3f} | {save_s:.3f} | {raw / save_s / 1e9:.2f} | {load_s:.3f} | {raw / load_s / 1e9:.2f} |")


def records_vs_parquet(lineitem, tmp):
    data = open(lineitem, "rb").read()
    archive = os.path.join(tmp, "lineitem.glyd")
    glyd.write_records(archive, data, format="csv")
    table = pyarrow.csv.read_csv(lineitem, parse_options=pyarrow.csv.ParseOptions(delimiter="|")) if data[:200].count(b"|") > 3 else pyarrow.csv.read_csv(lineitem)
    parquet = os.path.join(tmp, "lineitem.parquet")
    pq.write_table(table, parquet, compression="zstd", compression_level=3)
    g = median_time(lambda: glyd.read_table(archive))
    p = median_time(lambda: pq.read_table(parquet))
    rows = glyd.read_table(archive).num_rows
    assert rows == table.num_rows, (rows, table.num_rows)
    print("| file | bytes | read_table s | rows |")
    print("|---|---:|---:|---:|")
    print(f"| **glyd record archive** (`glyd.read_table`) | {os.path.getsize(archive):,} | {g:.3f} | {rows:,} |")
    print(f"| Parquet zstd(3) (`pyarrow.parquet.read_table`) | {os.path.getsize(parquet):,} | {p:.3f} | {table.num_rows:,} |")
    print()
    print(f"glyd / Parquet: bytes {os.path.getsize(archive) / os.path.getsize(parquet):.3f}×, read time {g / p:.3f}×.")


def overhead(lineitem, cli):
    data = open(lineitem, "rb").read()
    print("| level | `glyd.compress` s (in process) | `glyd -c` s (whole process) | Python / CLI |")
    print("|---|---:|---:|---:|")
    for level, flag in (("lz", "--lz"), ("max", "--max")):
        py = median_time(lambda: glyd.compress(data, level=level, threads=1))
        sh = median_time(lambda: subprocess.run([cli, "-c", "-T1", flag, lineitem], stdout=subprocess.DEVNULL, check=True))
        print(f"| {level} | {py:.3f} | {sh:.3f} | {py / sh:.3f} |")


def checkpoints(tmp):
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "python", "train_checkpoints.py")
    for args in (["--dtype", "fp32"], ["--dtype", "bf16", "--lr", "1e-4"]):
        print(f"`python examples/python/train_checkpoints.py {' '.join(args)}`:")
        print()
        print("```")
        out = subprocess.run([sys.executable, example, *args, "--out", os.path.join(tmp, "ckpt" + args[1])], capture_output=True, text=True, check=True)
        print(out.stdout.rstrip())
        print("```")
        print()


def main():
    section, models, lineitem, cli = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        if section == "tensors":
            tensors_section(models, tmp)
        else:
            rest_section(lineitem, cli, tmp)


def tensors_section(models, tmp):
    print("## Tensor files: MiniLM (22.7 M values), one core")
    print()
    print("`RAYON_NUM_THREADS=1`, `torch.set_num_threads(1)`, ZipNN `threads=1`; medians of 5; every load checked bit-exact against the tensors saved. GB/s are tensor bytes per second. glyd's save includes its fsync (a checkpoint is durable when `save_file` returns); the others do not sync.")
    print()
    torch.set_num_threads(1)
    print_tensor_rows(tensor_files(models, tmp, one_core=True))
    print()


def rest_section(lineitem, cli, tmp):
    print("## Checkpoints of the training example")
    print()
    checkpoints(tmp)
    print("## Record archives into pyarrow: TPC-H lineitem")
    print()
    print(f"`{os.path.basename(lineitem)}` ({os.path.getsize(lineitem):,} bytes), read whole into a `pyarrow.Table` on every core; medians of 5.")
    print()
    records_vs_parquet(lineitem, tmp)
    print()
    print("## The Python call's overhead")
    print()
    print(f"`glyd.compress(data, threads=1)` on `{os.path.basename(lineitem)}` held in memory, beside the release CLI compressing the file to /dev/null (`-T1`, its process start and file read included); medians of 5.")
    print()
    overhead(lineitem, cli)


if __name__ == "__main__":
    main()
