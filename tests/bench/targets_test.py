#!/usr/bin/python3
"""bench/compare/targets.py: the issues' targets judged on a run, and targets.json against the
cases compare.py plans (its argument: unet_perf, whose --list-tests names the tests)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

COMPARE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "compare")
sys.path.insert(0, COMPARE_DIR)

import compare  # noqa: E402
import targets  # noqa: E402

UNET_PERF = sys.argv.pop(1) if len(sys.argv) > 1 else "unet_perf"


def row(case, median, lo=None, hi=None):
    return {"case": case, "ratio_median": median, "ratio_lo": lo, "ratio_hi": hi}


class Targets(unittest.TestCase):
    def test_a_latency_target_is_met_by_its_median_and_resolved_by_its_interval(self):
        t = {"issue": 21, "case": "ep_lat 8 B", "at_most": 1.03}
        j = targets.judge(t, row("ep_lat 8 B", 1.02, 0.99, 1.05))
        self.assertTrue(j["met"])
        self.assertEqual(j["verdict"], "met, not resolved (the target is inside the interval)")
        self.assertEqual(j["target"], "<= 1.03")
        self.assertEqual(targets.judge(t, row("ep_lat 8 B", 1.02, 0.99, 1.03))["verdict"],
                         "met, not resolved (the target is inside the interval)")
        self.assertEqual(targets.judge(t, row("ep_lat 8 B", 1.02, 0.99, 1.029))["verdict"], "met, resolved")
        j = targets.judge(t, row("ep_lat 8 B", 1.10, 1.04, 1.20))
        self.assertEqual((j["met"], j["verdict"]), (False, "not met, resolved"))
        self.assertEqual(targets.judge(t, row("ep_lat 8 B", 1.0))["verdict"],
                         "met, fewer than 6 rounds: not resolved")

    def test_a_rate_target_and_the_bound_beside_it(self):
        t = {"issue": 24, "case": "stream_bw 65536 B", "at_least": 1.0, "bound": "raw"}
        below = {"bound": "raw", "ratio_median": 0.72, "ratio_lo": 0.53, "ratio_hi": 0.85}
        j = targets.judge(t, row("stream_bw 65536 B", 0.70, 0.60, 0.80), below)
        self.assertFalse(j["met"])
        self.assertEqual(j["verdict"], "not met, resolved; beyond the device: raw is 0.720, resolved")
        # A bound whose median is past the target but whose interval holds it proves nothing.
        noisy = dict(below, ratio_hi=1.0)
        self.assertEqual(targets.judge(t, row("stream_bw 65536 B", 0.70, 0.60, 0.80), noisy)["verdict"],
                         "not met, resolved; beyond the device by the median of raw, 0.720, but not "
                         "resolved")
        self.assertTrue(targets.judge(t, row("x", 0.7), {"bound": "raw", "ratio_median": 0.72})["verdict"]
                        .endswith("but not resolved"), "a bound of fewer than 6 rounds")
        j = targets.judge(t, row("stream_bw 65536 B", 1.05, 1.01, 1.2), {"bound": "raw", "ratio_median": 1.1})
        self.assertEqual(j["verdict"], "met, resolved; within the device's bound 1.100")
        lat = {"issue": 21, "case": "ep_lat 64 B", "at_most": 0.96, "bound": "w"}
        self.assertEqual(targets.bound_verdict({"bound": "w", "ratio_median": 0.99, "ratio_lo": 0.915,
                                                "ratio_hi": 1.194}, 0.96, True),
                         "beyond the device by the median of w, 0.990, but not resolved")
        self.assertIn("within", targets.judge(lat, row("ep_lat 64 B", 1.1), {"bound": "w", "ratio_median": 0.93})
                      ["verdict"])

    def test_only_the_cases_that_ran_are_judged_and_the_table_shows_them(self):
        ts = [{"issue": 21, "case": "a", "at_most": 1.0}, {"issue": 21, "case": "b", "at_least": 2.0}]
        judged = targets.verdicts(ts, [row("b", 2.5, 2.1, 2.9)], [])
        self.assertEqual([j["case"] for j in judged], ["b"])
        md = "\n".join(targets.markdown(judged))
        self.assertIn("| 21 | b >= 2 | 2.500 | 2.100..2.900 | met, resolved |", md)
        self.assertEqual(targets.markdown([]), [])

    def test_a_malformed_file_is_refused(self):
        for bad in ({"targets": [{"issue": 21, "case": "x"}]},
                    {"targets": [{"issue": 21, "case": "x", "at_most": 1, "at_least": 1}]},
                    {"targets": [{"at_most": 1}]}, {"targets": ["x"]}, {"x": []}, [1],
                    {"targets": [{"case": "x", "at_most": 1}]},
                    {"targets": [{"issue": 21, "case": "x", "at_most": "1"}]}):
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(bad, f)
            try:
                with self.assertRaises(ValueError):
                    targets.load(f.name)
            finally:
                os.unlink(f.name)

    def test_every_target_names_a_case_and_a_bound_that_compare_plans(self):
        tests = subprocess.run([UNET_PERF, "--list-tests"], capture_output=True, text=True,
                               check=True).stdout.split()
        limits = {"RC": 65535, "UD": 1000, "UD_MTU": 1024}
        a = argparse.Namespace(lat_sizes=[8, 64, 1024], bw_sizes=[64, 65536], tests=tests, am_window=8)
        cases = {c[0] for c in compare.cases(a, limits)}
        bounds = {b[0].format(s=s, mtu=limits["UD_MTU"]) for b in compare.BOUNDS for s in (8, 64)}
        for t in targets.load():
            self.assertIn(t["case"], cases, "no such case in compare.py")
            if "bound" in t:
                self.assertIn(t["bound"], bounds, "no such bound in compare.py")


if __name__ == "__main__":
    unittest.main()
