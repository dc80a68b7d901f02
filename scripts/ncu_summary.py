#!/usr/bin/env python3
"""Summarize an `ncu --csv --metrics gpu__time_duration.sum` log: per kernel name, launches and
total/mean time, largest first, plus the total. usage: ncu_summary.py LOG [TOP]"""
import csv, re, sys
from collections import defaultdict

def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        print("no ncu csv rows in", path)
        return
    tot = defaultdict(float)
    cnt = defaultdict(int)
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row.get("Kernel Name", "?")
        name = re.sub(r"\(.*", "", name)[:90]
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        v = v / 1000.0 if unit in ("nsecond", "ns") else (v if unit in ("usecond", "us") else v * 1000.0)
        tot[name] += v
        cnt[name] += 1
    total = sum(tot.values())
    print(f"{'kernel':90s} {'n':>6s} {'total us':>10s} {'mean us':>9s} {'share':>6s}")
    for name, t in sorted(tot.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{name:90s} {cnt[name]:6d} {t:10.1f} {t / cnt[name]:9.2f} {t / total:6.1%}")
    print(f"{'TOTAL':90s} {sum(cnt.values()):6d} {total:10.1f}")

main()
