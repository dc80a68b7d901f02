#!/usr/bin/env python3
"""README's figures table from pp-bench receipts (the rows test ReadmeFigures checks).

usage: scripts/readme-rows.py RECEIPTS.jsonl[.gz]... [--arm FILE | --any-arm] [--keep BASELINE.jsonl]...
                              [--baseline OUT.jsonl]

For every cell of the table (README "On the H200": file x tg128 / pp512 / pp2048 / tg128 at 4096
and 16384 keys) takes the newest receipt among the files given whose model file and row match and
whose arm is FILE (default: configs/arm-base.toml or no arm; --any-arm: any, for a curated file
such as receipts/baselines/h200-pp-bench-readme-rows-*.jsonl; never pp-bench's A/A copy), and prints
the table in README's format: our median, the llama.cpp anchor and the ratio, the fraction of the
roofline (decode) or of the bf16 peak (prefill). --baseline writes the receipt lines used, for
receipts/baselines/ (the sweep's series baselines and the test's source). --keep: a baseline file
(any arm) whose receipts fill the cells the RECEIPTS have none for (a call that measured only the
decode rows keeps the prefill rows of the file before it); its lines are not written to --baseline.
Cells without a receipt are left empty and listed on stderr.
"""
import gzip
import json
import sys

# llama.cpp on the H200 (../shared/anchors/llamacpp-h200.md, the figures issue 7 quotes).
ANCHORS = {
    ("qwen3-8b-q4_k_m", "tg128@d0"): 255.5, ("qwen3-8b-q4_k_m", "pp512@d0"): 10025,
    ("qwen3-8b-q4_k_m", "pp2048@d0"): 9824, ("qwen3-8b-q4_k_m", "tg128@d4096"): 238.3,
    ("qwen3-8b-q4_k_m", "tg128@d16384"): 197.1,
    ("qwen3-8b-q4_0", "tg128@d0"): 314.4, ("qwen3-8b-q4_0", "pp512@d0"): 11152,
    ("qwen3-8b-q8_0", "tg128@d0"): 244.5, ("qwen3-8b-q8_0", "pp512@d0"): 11544,
    ("qwen3-8b-f16", "pp512@d0"): 19482,
    ("qwen3-32b-q4_k_m", "tg128@d0"): 76.8, ("qwen3-32b-q4_k_m", "pp512@d0"): 2461,
    ("qwen3-30b-a3b-q8_0", "tg128@d0"): 283.2, ("qwen3-30b-a3b-q8_0", "pp512@d0"): 11317,
}
ROWS = [("qwen3-8b-q4_k_m", "qwen3-8b q4_k_m"), ("qwen3-8b-q4_0", "qwen3-8b q4_0"), ("qwen3-8b-q8_0", "qwen3-8b q8_0"),
        ("qwen3-8b-f16", "qwen3-8b f16"), ("qwen3-32b-q4_k_m", "qwen3-32b q4_k_m"),
        ("qwen3-30b-a3b-q8_0", "qwen3-30b-a3b q8_0 (MoE, device-routed)")]
COLS = [["tg128@d0"], ["pp512@d0"], ["pp2048@d0"], ["tg128@d4096", "tg128@d16384"]]


def receipts(paths):
    for p in paths:
        op = gzip.open if p.endswith(".gz") else open
        with op(p, "rt") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line), line.rstrip("\n")


def stem(r):
    path = (r.get("model") or {}).get("path", "")
    name = path.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith(".gguf") else name


def fmt(v):
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def main(argv):
    args, keep, arm, base_out, any_arm = [], [], None, None, False
    it = iter(argv[1:])
    for a in it:
        if a == "--arm":
            arm = next(it)
        elif a == "--any-arm":
            any_arm = True
        elif a == "--keep":
            keep.append(next(it))
        elif a == "--baseline":
            base_out = next(it)
        else:
            args.append(a)
    if not args:
        sys.exit(__doc__)

    def newest(paths, any_arm):
        best = {}
        for r, line in receipts(paths):
            m, res = r.get("metrics") or {}, r.get("results") or {}
            if r.get("tool") != "pp-bench" or "row" not in m or "tok_s_median" not in m or res.get("aa_copy"):
                continue
            a = res.get("arm") or ""
            if not any_arm and ((arm is None and a not in ("", "configs/arm-base.toml")) or (arm is not None and a != arm)):
                continue
            key = (stem(r), m["row"])
            if key not in best or best[key][0]["timestamp"] < r["timestamp"]:
                best[key] = (r, line)
        return best

    best = newest(args, any_arm)
    kept = {k: v for k, v in newest(keep, True).items() if k not in best}
    best.update(kept)
    print("| file | tg128 | pp512 | pp2048 | tg128 @ 4096 / 16384 |")
    print("| --- | --- | --- | --- | --- |")
    used = []
    for i, (st, label) in enumerate(ROWS):
        cells = []
        for ci, col in enumerate(COLS):
            got = [best.get((st, row)) for row in col]
            if not all(got):
                for row, g in zip(col, got):
                    if not g and (st, row) in ANCHORS:
                        print(f"readme-rows: no receipt for {st} {row}", file=sys.stderr)
                cells.append("")
                continue
            used += [g[1] for row, g in zip(col, got) if (st, row) not in kept]
            ours = [g[0]["metrics"]["tok_s_median"] for g in got]
            anchors = [ANCHORS[(st, row)] for row in col]
            prefill = col[0].startswith("pp")
            fracs = [g[0]["metrics"].get("bf16_peak_frac" if prefill else "roofline_frac", 0.0) for g in got]
            tok = " tok/s" if i == 0 and ci == 0 else ""
            words = (" of bf16 peak" if prefill else " of roofline") if i == 0 and ci < 2 else ""
            cells.append(" / ".join(fmt(v) for v in ours) + tok + " (" + " / ".join(fmt(v) for v in anchors) + ", " +
                         " / ".join(f"{o / a:.2f}x" for o, a in zip(ours, anchors)) + "), " +
                         " / ".join(f"{f:.2f}" for f in fracs) + words)
        print(f"| {label} |" + "|".join(f" {c} " if c else " " for c in cells) + "|")
    if base_out:
        with open(base_out, "w") as f:
            f.write("\n".join(used) + "\n")


if __name__ == "__main__":
    main(sys.argv)
