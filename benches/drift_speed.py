"""Write and rebuild speed of JSON lines whose keys change, two glyd binaries side by side
(alternating, one thread, medians of 7): the inputs of benches/drift.sh.

    python3 benches/corpus/drift.py ../shared/corpus/loghub DIR
    python3 benches/drift_speed.py OLD_GLYD NEW_GLYD DIR

Build each with `cargo build --release -p glyd-cli --no-default-features`; stop other work.
"""
import os
import statistics
import subprocess
import sys
import time


def timed(cmd):
    s = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - s


def main(old, new, d, runs=7):
    print("| input | write old (ms) | write new (ms) | new/old | rebuild old (ms) | rebuild new (ms) | new/old |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for f in ["drift.jsonl", "six.jsonl", "six-interleaved.jsonl"]:
        src = os.path.join(d, f)
        out = {old: src + ".old.glyd", new: src + ".new.glyd"}
        w, r = {old: [], new: []}, {old: [], new: []}
        for times, cmd in ((w, lambda e: [e, "-q", "-f", "-T1", "-r", "-o", out[e], src]),
                           (r, lambda e: [e, "-dc", "-T1", out[e]])):
            for i in range(runs):
                for e in (old, new) if i % 2 == 0 else (new, old):
                    times[e].append(timed(cmd(e)))
        mw = {e: statistics.median(v) * 1000 for e, v in w.items()}
        mr = {e: statistics.median(v) * 1000 for e, v in r.items()}
        print(f"| {f} | {mw[old]:.0f} | {mw[new]:.0f} | {mw[new] / mw[old]:.3f} "
              f"| {mr[old]:.0f} | {mr[new]:.0f} | {mr[new] / mr[old]:.3f} |")


if __name__ == "__main__":
    main(*sys.argv[1:4])
