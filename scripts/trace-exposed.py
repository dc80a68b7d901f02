#!/usr/bin/env python3
"""Exposed time per decode step by kernel, from pp-bench --trace timelines (CUPTI JSON Lines, gzipped).

usage: scripts/trace-exposed.py TRACE.jsonl.gz...

Steps are split at each embed_quant_kernel record (a decode step's first kernel). A kernel's exposed
time is the part of its [start, end) after every earlier kernel of the step ended: the time the
step would lose without it, with PDL overlap counted once. Printed per (kernel, grid): exposed us
per step, calls per step, exposed and mean duration per call.
"""
import collections
import gzip
import json
import re
import sys


def main(paths):
    for path in paths:
        recs = [json.loads(line) for line in gzip.open(path, "rt")]
        recs.sort(key=lambda r: r["start_ns"])
        steps, cur = [], []
        for r in recs:
            if r["kernel"].startswith("embed_quant_kernel") and cur:
                steps.append(cur)
                cur = []
            cur.append(r)
        if cur:
            steps.append(cur)
        agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
        walls = []
        for st in steps:
            prev_end = st[0]["start_ns"]
            walls.append((max(r["end_ns"] for r in st) - st[0]["start_ns"]) / 1e3)
            for r in st:
                exposed = max(0, r["end_ns"] - max(prev_end, r["start_ns"]))
                prev_end = max(prev_end, r["end_ns"])
                name = re.sub(r"\(memra::QType\)", "T", r["kernel"])[:70]
                a = agg[(name, r["grid"])]
                a[0] += 1
                a[1] += exposed / 1e3
                a[2] += (r["end_ns"] - r["start_ns"]) / 1e3
        n = len(steps)
        print(f"{path}: {n} steps, median wall {sorted(walls)[n // 2]:.1f} us")
        total = 0.0
        for (name, grid), (c, e, d) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
            total += e / n
            print(f"{e / n:8.1f} us/step {c / n:5.1f} calls {e / c:6.2f} exposed/call {d / c:6.2f} dur/call  grid {grid:6d}  {name}")
        print(f"total exposed {total:.1f} us/step")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
