#!/usr/bin/env python3
"""Rewrites a PostgreSQL dump's COPY blocks as INSERT statements, the way `pg_dump --inserts`
(one row per statement, `''` quoting) or `mysqldump` (many rows per statement, backquoted
names, backslash escapes) would write them: `\\N` becomes NULL, numbers stay bare (unless
they start with 0, like phone numbers), every other value is a string of the COPY text.
Every other line is copied as it is.

    python3 copy_to_inserts.py DUMP.sql ROWS_PER_INSERT pg|mysql > OUT.sql
"""
import sys


def literal(v, mysql):
    if v == "\\N":
        return "NULL"
    try:
        float(v)
        if v and not v.startswith("0"):
            return v
    except ValueError:
        pass
    if mysql:
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + v.replace("'", "''") + "'"


def main(path, per, flavor):
    mysql = flavor == "mysql"
    sep = "," if mysql else ", "
    out = sys.stdout
    table, pending = None, []

    def flush():
        if pending:
            out.write(f"INSERT INTO {table} VALUES {sep.join(pending)};\n")
            pending.clear()

    with open(path, encoding="utf-8") as f:
        for line in f:
            bare = line.rstrip("\n")
            if table is not None:
                if bare == "\\.":
                    flush()
                    table = None
                    continue
                pending.append("(" + sep.join(literal(v, mysql) for v in bare.split("\t")) + ")")
                if len(pending) == per:
                    flush()
            elif line.startswith("COPY "):
                name = line[5:].split(" ")[0]
                table = f"`{name.removeprefix('public.')}`" if mysql else name
            else:
                out.write(line)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
