#!/usr/bin/env python3
"""Reference parser for the loghub logs of the shared corpus, written from each system's
documented line layout (independently of glyd's learner): each line's time and level, then
per level the earliest and latest time (microseconds since 1970-01-01, no time zone applied)
and the line count.

Usage: logref.py FILE YEAR   (YEAR: for layouts that spell no year)
Prints one line per level, sorted, the lines without a level first as an empty level:
    level<TAB>min<TAB>max<TAB>count   (min and max empty where no line of the level has a time)
"""

import calendar
import re
import sys

MONTHS = {m: i + 1 for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"])}


def micros(y, mo, d, h, mi, s, frac=""):
    try:
        secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s), 0, 0, 0))
    except ValueError:
        return None
    frac = (frac + "000000")[:6]
    return secs * 1_000_000 + int(frac)


def android(line, year):
    m = re.match(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) +\d+ +\d+ ([VDIWEFA]) ", line)
    if not m:
        return None, None
    return micros(year, *m.groups()[:6]), m.group(7)


def apache(line, year):
    m = re.match(r"\[\w{3} (\w{3}) (\d\d) (\d\d):(\d\d):(\d\d) (\d{4})\] \[(\w+)\]", line)
    if not m:
        return None, None
    mon, d, h, mi, s, y, level = m.groups()
    return micros(y, MONTHS[mon], d, h, mi, s), level


def bgl(line, year):
    f = line.split(" ")
    if len(f) < 9:
        return None, None
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)-(\d\d)\.(\d\d)\.(\d\d)\.(\d{6})", f[4])
    return (micros(*m.groups()) if m else None), f[8]


def hdfs(line, year):
    m = re.match(r"(\d\d)(\d\d)(\d\d) (\d\d)(\d\d)(\d\d) \d+ (\w+) ", line)
    if not m:
        return None, None
    y, mo, d, h, mi, s, level = m.groups()
    return micros(2000 + int(y), mo, d, h, mi, s), level


def hpc(line, year):
    f = line.split(" ")
    if len(f) > 4 and re.fullmatch(r"\d{10}", f[4]):
        return int(f[4]) * 1_000_000, None
    return None, None


def iso_ms(line, year):
    # Hadoop `2015-10-18 18:01:47,978 INFO [main] ...`,
    # Zookeeper `2015-07-29 17:41:44,747 - INFO  [...] - ...`
    m = re.match(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3}) (?:- )?(\w+) ", line)
    if not m:
        return None, None
    return micros(*m.groups()[:7]), m.group(8)


def syslog(line, year):
    m = re.match(r"(\w{3}) ( \d|\d\d) (\d\d):(\d\d):(\d\d) ", line)
    if not m:
        return None, None
    mon, d, h, mi, s = m.groups()
    return micros(year, MONTHS[mon], d.strip(), h, mi, s), None


def spark(line, year):
    m = re.match(r"(\d\d)/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d) (\w+) ", line)
    if not m:
        return None, None
    y, mo, d, h, mi, s, level = m.groups()
    return micros(2000 + int(y), mo, d, h, mi, s), level


PARSERS = {
    "Android": android, "Apache": apache, "BGL": bgl, "HDFS": hdfs, "HPC": hpc,
    "Hadoop": iso_ms, "Zookeeper": iso_ms, "Linux": syslog, "OpenSSH": syslog, "Spark": spark,
}


def main():
    path, year = sys.argv[1], int(sys.argv[2])
    system = path.rsplit("/", 1)[-1].split("_")[0]
    parse = PARSERS[system]
    data = open(path, "rb").read().decode("utf-8", "replace")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    groups = {}
    for line in lines:
        t, level = parse(line.rstrip("\r"), year)
        g = groups.setdefault(level or "", [None, None, 0])
        if t is not None:
            g[0] = t if g[0] is None else min(g[0], t)
            g[1] = t if g[1] is None else max(g[1], t)
        g[2] += 1
    for level in sorted(groups):
        lo, hi, n = groups[level]
        print("\t".join([level, "" if lo is None else str(lo), "" if hi is None else str(hi), str(n)]))


if __name__ == "__main__":
    main()
