#!/usr/bin/env python3
"""scripts/pm-timeline.py on a synthetic --pm-sample file whose answers follow from its construction.

Two decode steps of 30 us each (the second 40 us after the first), three launches per step: the step's
first kernel (embed_quant_kernel, 0..2 us), A (2..12 us) and B (8..22 us, launched under A). 1 us samples:
the DRAM at 0% outside the kernels and during the first kernel, 100% while A is the exposed launch
(2..12 us) and 50% while B is (12..22 us), and 3.0e6 bytes read per sample at 100%, 1.5e6 at 50%.
So per step: exposed A 10 us at 100 (deficit 0), B 10 us at 50 (deficit 5), the first kernel 2 us at 0
(deficit 2); kernels 22 us, DRAM-busy equivalent 15 us, deficit 7 us; 45 MB read per step.
"""
import contextlib
import gzip
import importlib.util
import io
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "pm-timeline.py")
spec = importlib.util.spec_from_file_location("pm_timeline", SCRIPT)
pm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pm)

M = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
B = "dram__bytes_read.sum"
US = 1000
T0 = 1_000_000_000  # an arbitrary clock origin (ns)
STEP_AT = (0, 40)  # us


def lines():
    out = []
    for s0 in STEP_AT:
        base = T0 + s0 * US
        for name, a, b, grid in (("embed_quant_kernel<T12>", 0, 2, 1), ("A<1>", 2, 12, 128), ("B<2>", 8, 22, 384)):
            out.append({"row": "tg128@d0", "arm": "", "kernel": name, "grid": grid, "start_ns": base + a * US,
                        "end_ns": base + b * US})
    for t in range(0, 70):  # samples over both steps and the gap between them
        v = 0.0
        for s0 in STEP_AT:
            if s0 + 2 <= t < s0 + 12:
                v = 100.0
            elif s0 + 12 <= t < s0 + 22:
                v = 50.0
        out.append({"row": "tg128@d0", "arm": "", "start_ns": T0 + t * US, "end_ns": T0 + (t + 1) * US, M: v,
                    B: 3.0e6 * v / 100})
    return out


def run(argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        pm.main(argv)
    return buf.getvalue()


class PmTimeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "pm.jsonl.gz")
        with gzip.open(cls.path, "wt") as f:
            for r in lines():
                f.write(json.dumps(r) + "\n")
        cls.out = run([cls.path])

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def table(self):
        rows = {}
        for ln in self.out.splitlines():
            c = [x.strip() for x in ln.strip("|").split("|")]
            if len(c) == 5 and c[1].isdigit():
                rows[c[0]] = (int(c[1]), float(c[2]), float(c[3]), float(c[4]))
        return rows

    def test_per_launch_exposed_mean_and_deficit(self):
        t = self.table()
        self.assertEqual(t["A<1>"], (128, 10.0, 100.0, 0.0))
        self.assertEqual(t["B<2>"], (384, 10.0, 50.0, 5.0))
        self.assertEqual(t["embed_quant_kernel<T12>"], (1, 2.0, 0.0, 2.0))

    def test_step_totals(self):
        m = re.search(r"per step: kernels ([\d.]+) us, DRAM-busy equivalent ([\d.]+) us \(([\d.]+)\), deficit ([\d.]+) us", self.out)
        self.assertIsNotNone(m, self.out)
        self.assertEqual([float(x) for x in m.groups()], [22.0, 15.0, round(15 / 22, 3), 7.0])

    def test_window_and_bytes(self):
        # The window runs from the first kernel's start (0 us) to the last one's end (62 us): 62 samples,
        # 20 at 100, 20 at 50, 22 at 0 (the first kernels and the 18 us between the steps).
        m = re.search(r"window: ([\d.]+) us \(kernels\), (\d+) samples, mean ([\d.]+); share of time below 10: ([\d.]+), "
                      r"25: ([\d.]+), 50: ([\d.]+), 90: ([\d.]+)", self.out)
        self.assertIsNotNone(m, self.out)
        g = m.groups()
        self.assertEqual((float(g[0]), int(g[1])), (62.0, 62))
        self.assertAlmostEqual(float(g[2]), (20 * 100 + 20 * 50) / 62, places=1)
        self.assertEqual([float(x) for x in g[3:]], [round(22 / 62, 3), round(22 / 62, 3), round(22 / 62, 3), round(42 / 62, 3)])
        self.assertIn("0.045 GB per step over 2 steps", self.out)

    def test_slice_names_the_running_kernels(self):
        out = run(["--slice", "1", "9", "12", self.path])
        rows = [ln for ln in out.splitlines() if re.match(r"^\s+\d+\.\d", ln)]
        self.assertEqual(len(rows), 4, out)  # samples at 9, 10, 11, 12 us after step 1's first kernel
        self.assertIn("A<1>/128 | B<2>/384", rows[0])
        self.assertTrue(rows[-1].split()[1] == "50.0" and "A<1>" not in rows[-1], rows[-1])

    def test_without_kernel_records_the_window_is_the_busy_samples(self):
        path = os.path.join(self.dir.name, "nokernels.jsonl")
        with open(path, "w") as f:
            for r in lines():
                if "kernel" not in r:
                    f.write(json.dumps(r) + "\n")
        out = run([path])
        # samples above 5 run from 2 us to 62 us
        self.assertIn("window: 60.0 us (samples above 5), 60 samples", out)
        self.assertNotIn("DRAM-busy equivalent", out)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=1)
