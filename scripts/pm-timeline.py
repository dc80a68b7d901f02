#!/usr/bin/env python3
"""DRAM activity along decode steps, from pp-bench --pm-sample files (JSON Lines, optionally gzipped).

usage: scripts/pm-timeline.py [--metric NAME] [--slice STEP FROM_US TO_US] PM.jsonl[.gz]...

A --pm-sample file holds, per (row, arm), the PM samples of its recorded pass (start_ns, end_ns and
one value per metric) and, where CUPTI allowed both at once, the same pass's kernel records ("kernel"
lines, as pp-bench --trace writes them). Per (row, arm) this prints:
- the metric over the steps' window (from the first kernel's start to the last kernel's end; without
  kernel records, from the first to the last sample above 5): its time-weighted mean and the share of
  time below 10 / 25 / 50 / 90 (when it is a percentage of peak);
- with dram__bytes_read.sum sampled, the bytes read per step (a check of the sampling: about the
  bytes/token pp-bench prints for the row);
- with kernel records: the steps' kernel span, the DRAM-busy equivalent (the integral of the
  throughput's fraction of peak: the time the step's reads would take at the peak), and per launch
  its exposed time per step (as scripts/trace-exposed.py counts it), the DRAM's mean over that time
  and the deficit (exposed time x (1 - mean / 100)): which launches leave the DRAM idle, in us per step;
- with --slice STEP FROM_US TO_US: each sample between FROM_US and TO_US after step STEP's first
  kernel, its value and the kernels running at its middle.
Default metric: dram__throughput.avg.pct_of_peak_sustained_elapsed.
"""
import bisect
import collections
import gzip
import json
import re
import sys

STEP_FIRST = "embed_quant_kernel"  # the first kernel of a decode step (pp-bench records 8 steps)


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    g = collections.OrderedDict()
    with op(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            g.setdefault((r.get("row", ""), r.get("arm", "")), []).append(r)
    return g


def mean_over(samples, metric, a, b, ends=None):
    """time-weighted mean of metric over [a, b) and the covered ns; samples sorted by start_ns and not
    overlapping (ends: their end_ns in that order, to start at the first sample that ends after a)"""
    if ends is None:
        ends = [s["end_ns"] for s in samples]
    tot = cov = 0.0
    for i in range(bisect.bisect_right(ends, a), len(samples)):
        s = samples[i]
        if s["start_ns"] >= b:
            break
        lo, hi = max(a, s["start_ns"]), min(b, s["end_ns"])
        if hi > lo:
            tot += s[metric] * (hi - lo)
            cov += hi - lo
    return (tot / cov if cov else float("nan")), cov


def short(name):
    return re.sub(r"\(memra::QType\)", "T", name)[:70]


def exposed_intervals(kernels):
    """(kernel, lo, hi): the part of each launch not covered by launches started before it"""
    out, prev_end = [], kernels[0]["start_ns"]
    for k in kernels:
        lo = max(prev_end, k["start_ns"])
        prev_end = max(prev_end, k["end_ns"])
        if k["end_ns"] > lo:
            out.append((k, lo, k["end_ns"]))
    return out


def report(key, recs, metric, sl):
    samples = sorted((r for r in recs if "kernel" not in r and metric in r), key=lambda r: r["start_ns"])
    kernels = sorted((r for r in recs if "kernel" in r), key=lambda r: r["start_ns"])
    print(f"## {key[0]} {key[1] or 'base'}: {len(samples)} samples, {len(kernels)} kernels ({metric})")
    if not samples:
        return
    if kernels:
        a, b = kernels[0]["start_ns"], max(k["end_ns"] for k in kernels)
    else:
        busy = [s for s in samples if s[metric] > 5]
        a, b = (busy[0]["start_ns"], busy[-1]["end_ns"]) if busy else (samples[0]["start_ns"], samples[-1]["end_ns"])
    win = [s for s in samples if s["end_ns"] > a and s["start_ns"] < b]
    m, cov = mean_over(win, metric, a, b)
    dur = sum(min(b, s["end_ns"]) - max(a, s["start_ns"]) for s in win)
    line = f"window: {(b - a) / 1e3:.1f} us ({'kernels' if kernels else 'samples above 5'}), {len(win)} samples, mean {m:.3g}"
    if metric.endswith("pct_of_peak_sustained_elapsed") and dur:
        low = {t: sum(min(b, s["end_ns"]) - max(a, s["start_ns"]) for s in win if s[metric] < t) / dur
               for t in (10, 25, 50, 90)}
        line += "; share of time below " + ", ".join(f"{t}: {v:.3f}" for t, v in low.items())
    print(line)
    firsts = [k for k in kernels if k["kernel"].startswith(STEP_FIRST)]
    steps = len(firsts) or 8
    if "dram__bytes_read.sum" in win[0]:
        total = sum(s.get("dram__bytes_read.sum", 0.0) for s in win)
        print(f"dram__bytes_read.sum: {total / steps / 1e9:.3f} GB per step over {steps} steps, "
              f"{total / ((b - a) / 1e9) / 1e12:.3f} TB/s over the window")
    if not kernels:
        return
    exp = exposed_intervals(kernels)
    ends = [s["end_ns"] for s in win]
    means = [mean_over(win, metric, lo, hi, ends) for _, lo, hi in exp]  # (mean, covered ns) per exposed interval
    span = sum(hi - lo for _, lo, hi in exp)  # the kernels' busy time (host gaps between steps excluded)
    if metric.endswith("pct_of_peak_sustained_elapsed"):
        # (the integral over the sampled part of each exposed interval: an unsampled part counts as idle)
        busy_eq = sum(m * c / 100 for m, c in means if c)
        print(f"per step: kernels {span / steps / 1e3:.1f} us, DRAM-busy equivalent {busy_eq / steps / 1e3:.1f} us "
              f"({busy_eq / span:.3f}), deficit {(span - busy_eq) / steps / 1e3:.1f} us")
    agg = collections.defaultdict(lambda: [0.0, 0.0])  # exposed ns, metric x ns
    for (k, lo, hi), (v, c) in zip(exp, means):
        e = agg[(short(k["kernel"]), k["grid"])]
        e[0] += hi - lo
        if c:
            e[1] += v * (hi - lo)
    print("| kernel | grid | exposed us/step | mean over its exposed time | deficit us/step |\n| --- | --- | --- | --- | --- |")
    for (name, grid), (ens, vns) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        mv = vns / ens if ens else float("nan")
        print(f"| {name} | {grid} | {ens / 1e3 / steps:.1f} | {mv:.3g} | {ens * (1 - mv / 100) / 1e3 / steps:.1f} |")
    if sl:
        step, f_us, t_us = sl
        if step >= len(firsts):
            print(f"--slice: no step {step} ({len(firsts)} recorded)")
            return
        st = firsts[step]["start_ns"]
        print(f"### step {step}, {f_us:g} .. {t_us:g} us after its first kernel")
        for s in win:
            t0 = (s["start_ns"] - st) / 1e3
            if t0 < f_us or t0 > t_us:
                continue
            mid = (s["start_ns"] + s["end_ns"]) / 2
            run = [f"{short(k['kernel'])[:36]}/{k['grid']}" for k in kernels if k["start_ns"] <= mid < k["end_ns"]]
            print(f"{t0:8.1f} {s[metric]:6.1f} {'#' * int(max(0.0, s[metric]) / 5):20s} {' | '.join(run)}")


def main(argv):
    metric, sl = "dram__throughput.avg.pct_of_peak_sustained_elapsed", None
    while argv[:1] in (["--metric"], ["--slice"]):
        if argv[0] == "--metric":
            metric, argv = argv[1], argv[2:]
        else:
            sl, argv = (int(argv[1]), float(argv[2]), float(argv[3])), argv[4:]
    if not argv:
        sys.exit(__doc__)
    for p in argv:
        for key, recs in load(p).items():
            report(key, recs, metric, sl)


if __name__ == "__main__":
    main(sys.argv[1:])
