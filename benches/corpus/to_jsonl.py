"""Converts a CSV with a header row to JSON lines: one object per row, keys in column order,
compact separators; integers and decimals become JSON numbers (spelled as in the CSV), every
other value a string. Used by make.sh to build TPC-H tables as JSON lines.

    python3 to_jsonl.py IN.csv OUT.jsonl
"""
import csv
import json
import re
import sys

NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?\Z")


def value(v):
    return v if NUMBER.match(v) else json.dumps(v, ensure_ascii=False)


def main(src, dst):
    with open(src, newline="", encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        rows = csv.reader(f)
        keys = [json.dumps(k) for k in next(rows)]
        for row in rows:
            out.write("{" + ",".join(f"{k}:{value(v)}" for k, v in zip(keys, row)) + "}\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
