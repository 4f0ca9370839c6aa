#!/usr/bin/env python3
"""`unsafe` only where docs/ARCHITECTURE.md says it may be: every other source file of the
workspace must have none (comments aside), so new unsafe code cannot spread unnoticed. Each
listed file keeps a `// SAFETY:` comment on every block (clippy's
`undocumented_unsafe_blocks`, denied workspace-wide, checks that).

    python3 .ci/unsafe_fences.py
"""
import os
import re
import sys

# The fences, by crate: what each holds is in docs/ARCHITECTURE.md.
FENCES = {
    "core/src": [
        "cpu.rs",            # run-time dispatch to target-feature builds (multiversion!)
        "copy.rs",           # wide match and literal copies
        "checksum.rs",       # AVX-512 XXH3
        "window.rs",         # the match finder's unchecked 8-byte compares
        "lz/encode.rs",      # the greedy finder's unchecked loads
        "lz/decode.rs",      # the fast LZ decoder's copy loop
        "entropy/bits.rs",   # bit reader refills
        "entropy/fse.rs",    # tANS lanes' unchecked refills
        "entropy/huffman.rs",  # Huffman streams' unchecked refills
        "elz/decode.rs",     # the sequence pass's copies and AVX-512 group calls
        "elz/sequence_fields.rs",  # AVX-512 field reads
        "elz/resolve.rs",    # AVX-512 repeat-offset resolution
    ],
    "columnar/src": [
        "spelling.rs",       # digits written into reserved room
        "rows.rs",           # rows joined from tile buffers with wide copies
        "codec/words.rs",    # SSE2 word masks and word copies
        "column/arrow.rs",   # Arrow arrays from parts already validated
        "shred/delimited.rs",  # SSE2 delimiter masks
    ],
    "gpu/src": [
        "cuda.rs",           # the CUDA driver
        "bf16_avx512.rs",    # AVX-512 tiered decode
        "dense_avx512.rs",   # AVX-512 dense assembly
    ],
    "cli/src": [
        "main.rs",           # mimalloc's option setter
    ],
    "udf/src": [],           # #![forbid(unsafe_code)]
    "connectors/src": [],    # #![forbid(unsafe_code)]
    "capi/src": [
        "oneshot.rs",        # the C interface: callers' buffers
        "stream.rs",         # the C interface: callbacks and contexts
        "kv.rs",             # the C interface: KV pages
    ],
    "python/src": [
        "buffer.rs",         # callers' Python buffers borrowed as byte slices
    ],
    "testkit/src": [
        "kafka.rs",          # the mock Kafka cluster's rebalance delay
    ],
}


def has_unsafe(path):
    for line in open(path):
        code = line.split("//")[0]
        if re.search(r"\bunsafe\b", code):
            return True
    return False


def main():
    bad = []
    for root, allowed in FENCES.items():
        for dirpath, _, files in os.walk(root):
            for f in files:
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if rel not in allowed and has_unsafe(path):
                    bad.append(path)
    if bad:
        print("unsafe outside its fences (docs/ARCHITECTURE.md): " + ", ".join(sorted(bad)))
        return 1
    print("unsafe: only in the fenced modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
