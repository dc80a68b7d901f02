#!/usr/bin/env python3
"""Exposed time per decode step by kernel, from pp-bench --trace timelines (CUPTI JSON Lines, gzipped).

usage: scripts/trace-exposed.py [--compare | --chain] TRACE.jsonl.gz...

Records are grouped by (row, arm) (pp-bench --trace with several --arm files writes every arm's steps
to the same file, labelled), each group summarized on its own. Steps are split at each
embed_quant_kernel record (a decode step's first kernel). A kernel's exposed time is the part of its
[start, end) after every earlier kernel of the step ended: the time the step would lose without it,
with PDL overlap counted once. Printed per (kernel, grid): exposed us per step, calls per step,
exposed and mean duration per call.

--compare: one table per row with a column per arm (exposed us per step by kernel, then the step's
median wall): the per-launch A/B in the step, where kernel-check --perf times a launch alone
(bench/notes/norm-decode.md: forms faster alone were slower in the step).

--chain: for every three consecutive launches N, N+1, N+2 of a step (grouped by their kinds), the medians
of start[N+2] - end[N] and start[N+2] - start[N+1]: how far each launch's first block comes after the end
of the launch two places before it. Programmatic dependent launch lets N+2 start when N+1 triggers; the
r64 timelines show it never starts more than ~1.6 us before N ends (bench/notes/decode-trace.md).
"""
import collections
import gzip
import json
import re
import sys


def steps_of(recs):
    recs = sorted(recs, key=lambda r: r["start_ns"])
    steps, cur = [], []
    for r in recs:
        if r["kernel"].startswith("embed_quant_kernel") and cur:
            steps.append(cur)
            cur = []
        cur.append(r)
    if cur:
        steps.append(cur)
    return steps


def summarize(recs):
    """(median wall us, {(name, grid): [calls, exposed us, duration us]} per step, steps)"""
    steps = steps_of(recs)
    agg = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
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
    per_step = {k: [c / n, e / n, d / n] for k, (c, e, d) in agg.items()}
    return sorted(walls)[n // 2], per_step, n


def groups(path):
    g = collections.OrderedDict()
    for line in gzip.open(path, "rt"):
        r = json.loads(line)
        g.setdefault((r.get("row", ""), r.get("arm", "") or "base"), []).append(r)
    return g


def print_group(label, recs):
    wall, per_step, n = summarize(recs)
    print(f"{label}: {n} steps, median wall {wall:.1f} us")
    total = 0.0
    for (name, grid), (c, e, d) in sorted(per_step.items(), key=lambda kv: -kv[1][1]):
        total += e
        print(f"{e:8.1f} us/step {c:5.1f} calls {e / c:6.2f} exposed/call {d / c:6.2f} dur/call  grid {grid:6d}  {name}")
    print(f"total exposed {total:.1f} us/step")


def print_compare(path, g):
    rows = collections.OrderedDict()
    for (row, arm), recs in g.items():
        rows.setdefault(row, collections.OrderedDict())[arm] = summarize(recs)
    for row, arms in rows.items():
        names = list(arms)
        keys = sorted({k for s in arms.values() for k in s[1]}, key=lambda k: -max(s[1].get(k, [0, 0, 0])[1] for s in arms.values()))
        print(f"{path} {row}: exposed us per step by arm")
        print("| kernel | grid | " + " | ".join(names) + " |")
        print("| --- | --- |" + " --- |" * len(names))
        for name, grid in keys:
            cells = [f"{arms[a][1][(name, grid)][1]:.1f}" if (name, grid) in arms[a][1] else "" for a in names]
            print(f"| {name} | {grid} | " + " | ".join(cells) + " |")
        print("| median wall per step | | " + " | ".join(f"{arms[a][0]:.1f}" for a in names) + " |")


def print_chain(label, recs):
    """start[N+2] - end[N] and start[N+2] - start[N+1] (us, medians over the steps) per launch triple."""
    def kind(r):
        return re.sub(r"\(memra::QType\)", "T", r["kernel"]).split("<")[0].split("::")[-1] + f"/{r['grid']}"
    gap2, gap1 = collections.OrderedDict(), collections.defaultdict(list)
    for st in steps_of(recs):
        for a, b, c in zip(st, st[1:], st[2:]):
            key = (kind(a), kind(b), kind(c))
            gap2.setdefault(key, []).append((c["start_ns"] - a["end_ns"]) / 1e3)
            gap1[key].append((c["start_ns"] - b["start_ns"]) / 1e3)
    print(f"{label}: start[N+2] - end[N] and start[N+2] - start[N+1], us (median, min), per launch triple")
    for key, v in sorted(gap2.items(), key=lambda kv: -len(kv[1])):
        v, w = sorted(v), sorted(gap1[key])
        print(f"{len(v):5d} x  {v[len(v) // 2]:7.2f} (min {v[0]:6.2f})  {w[len(w) // 2]:7.2f}  {' -> '.join(key)}")


def main(args):
    compare = "--compare" in args
    chain = "--chain" in args
    for path in [a for a in args if a not in ("--compare", "--chain")]:
        g = groups(path)
        if chain:
            for (row, arm), recs in g.items():
                print_chain(path if len(g) == 1 else f"{path} [{row} {arm}]", recs)
            continue
        if compare:
            print_compare(path, g)
            continue
        for (row, arm), recs in g.items():
            label = path if len(g) == 1 else f"{path} [{row} {arm}]"
            print_group(label, recs)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
