#!/usr/bin/env python3
"""DRAM activity along decode steps, from pp-bench --pm-sample files (JSON Lines, optionally gzipped).

usage: scripts/pm-timeline.py [--metric NAME] PM.jsonl[.gz]...

A --pm-sample file holds, per (row, arm), the PM samples of its recorded pass (start_ns, end_ns and
one value per metric) and, where CUPTI allowed both at once, the same pass's kernel records ("kernel"
lines, as pp-bench --trace writes them). Per (row, arm) this prints the metric over the pass (its
time-weighted mean and the share of time below 25 / 50 % when it is a percentage) and, with the
kernels, each kernel's exposed time per step (as scripts/trace-exposed.py counts it) beside the
metric's time-weighted mean over that exposed time: which launches hold the DRAM busy and which
leave it idle. With dram__bytes_read.sum sampled, the bytes read per step (a check: about the
bytes/token pp-bench prints for the row). Default metric: dram__throughput.avg.pct_of_peak_sustained_elapsed.
"""
import collections
import gzip
import json
import re
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    g = collections.OrderedDict()
    for line in op(path, "rt"):
        r = json.loads(line)
        g.setdefault((r.get("row", ""), r.get("arm", "")), []).append(r)
    return g


def mean_over(samples, metric, a, b):
    """time-weighted mean of metric over [a, b) and the covered ns"""
    tot = cov = 0.0
    for s in samples:
        lo, hi = max(a, s["start_ns"]), min(b, s["end_ns"])
        if hi > lo:
            tot += s[metric] * (hi - lo)
            cov += hi - lo
    return (tot / cov if cov else float("nan")), cov


def report(key, recs, metric):
    samples = sorted((r for r in recs if "kernel" not in r and metric in r), key=lambda r: r["start_ns"])
    kernels = sorted((r for r in recs if "kernel" in r), key=lambda r: r["start_ns"])
    print(f"## {key[0]} {key[1] or 'base'}: {len(samples)} samples, {len(kernels)} kernels ({metric})")
    if not samples:
        return
    a, b = samples[0]["start_ns"], samples[-1]["end_ns"]
    m, _ = mean_over(samples, metric, a, b)
    dur = sum(s["end_ns"] - s["start_ns"] for s in samples)
    low = {t: sum(s["end_ns"] - s["start_ns"] for s in samples if s[metric] < t) / dur for t in (25, 50)}
    print(f"pass: {(b - a) / 1e3:.1f} us sampled, mean {m:.3g}; share of time below 25: {low[25]:.3f}, below 50: {low[50]:.3f}")
    steps = sum(1 for k in kernels if k["kernel"].startswith("embed_quant_kernel")) or 8  # (pp-bench records 8 decode steps)
    if "dram__bytes_read.sum" in samples[0]:
        # a check of the sampling itself: a decode step reads about its weights' bytes (pp-bench's bytes/token)
        total = sum(s.get("dram__bytes_read.sum", 0.0) for s in samples)
        print(f"dram__bytes_read.sum: {total / steps / 1e9:.3f} GB per step over {steps} steps, "
              f"{total / ((b - a) / 1e9) / 1e12:.3f} TB/s over the sampled time")
    if not kernels:
        return
    agg = collections.defaultdict(lambda: [0.0, 0.0])  # exposed ns, metric x ns
    prev_end = kernels[0]["start_ns"]
    for k in kernels:
        lo = max(prev_end, k["start_ns"])
        prev_end = max(prev_end, k["end_ns"])
        if k["end_ns"] <= lo:
            continue
        v, cov = mean_over(samples, metric, lo, k["end_ns"])
        name = re.sub(r"\(memra::QType\)", "T", k["kernel"])[:70]
        e = agg[(name, k["grid"])]
        e[0] += k["end_ns"] - lo
        if cov:
            e[1] += v * (k["end_ns"] - lo)
    print("| kernel | grid | exposed us/step | mean over its exposed time |\n| --- | --- | --- | --- |")
    for (name, grid), (ens, vns) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name} | {grid} | {ens / 1e3 / steps:.1f} | {vns / ens if ens else float('nan'):.3g} |")


def main(argv):
    metric = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    if argv[:1] == ["--metric"]:
        metric, argv = argv[1], argv[2:]
    if not argv:
        sys.exit(__doc__)
    for p in argv:
        for key, recs in load(p).items():
            report(key, recs, metric)


if __name__ == "__main__":
    main(sys.argv[1:])
