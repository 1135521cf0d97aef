#!/usr/bin/python3
"""bench/compare's figures and report from a synthetic run, no device: the cases compare.py's
own cases() plans (every test `UNET_PERF --list-tests` names but dgram_lat), made-up figures, written through compare.py's
write_outputs() as a run writes them, then redrawn by hand (plots.py RESULTS_DIR --out DIR).
Exits 77 (skipped) without python3-matplotlib."""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE_DIR = os.path.join(HERE, "..", "..", "bench", "compare")
sys.path.insert(0, COMPARE_DIR)

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("compare_plots_test: no matplotlib (python3-matplotlib); skipped")
    sys.exit(77)

import compare  # noqa: E402
import plots  # noqa: E402

# unet_perf's tests (the path is the test's argument), but one layer without data.
UNET_PERF = sys.argv.pop(1) if len(sys.argv) > 1 else "unet_perf"
TESTS = [t for t in subprocess.run([UNET_PERF, "--list-tests"], capture_output=True, text=True,
                                   check=True).stdout.split() if t != "dgram_lat"]
LIMITS = {"RC": 65535, "UD": 1000, "UD_MTU": 1024}
LAT_SIZES = [int(s) for s in compare.LAT_SIZES.split(",")]  # the default sweep
LAYER_FIGURES = ["endpoint.png", "direct.png", "am.png", "stream.png"]


def synthetic_run(out, no_plots=False):
    """Writes OUT/results.json and results.md (and the figures, unless no_plots) as compare.py's
    main() would after two rounds."""
    a = argparse.Namespace(lat_sizes=LAT_SIZES, bw_sizes=[64, 65536], tests=TESTS, am_window=8,
                           device="rxe0", rounds=2, out=out, targets=compare.targets.DEFAULT,
                           no_plots=no_plots)
    results = {}
    for name, kind, size, test, _, tool, metric, transport in compare.cases(a, LIMITS):
        x = results[name] = {"kind": kind, "size": size, "unet_test": test, "peer": tool,
                             "metric": metric, "transport": transport, "unet": [],
                             "peer_values": [], "unet_runs": [], "peer_runs": []}
        for rnd in range(a.rounds):
            for who, base in (("unet", 10.0 + rnd), ("peer", 11.0)):
                v = base + size / 1000 if kind == compare.LAT else base / (1 + size / 1000)
                run = ({"value": v, "latency_us": v} if kind == compare.LAT else
                       {"value": v, "bw_MBps": v * 50, "msg_rate_Mpps": v / 100})
                x["unet" if who == "unet" else "peer_values"].append(v)
                x[f"{who}_runs"].append(run)
    context = {f"{tool} {s} B": [12.0 + s / 100, 12.5 + s / 100]
               for tool in ("rstream", "sockperf TCP") for s in a.lat_sizes}
    with contextlib.redirect_stdout(io.StringIO()):
        compare.write_outputs(a, results, compare.summarize(results), context,
                              compare.bounds(results, a.lat_sizes, LIMITS))
    return results


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 1000


class ComparePlots(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        # What an older run or one with more layers left behind: removed, not reported.
        for stale in ("latency.png", "bandwidth.png", "datagram.png"):
            open(os.path.join(self.out, stale), "w").close()
        self.results = synthetic_run(self.out)

    def tearDown(self):
        self.tmp.cleanup()

    def check_outputs(self, out):
        for f in ["ratios.png"] + LAYER_FIGURES:
            self.assertTrue(is_png(os.path.join(out, f)), f"{f}: no PNG written")
        for f in ("latency.png", "bandwidth.png", "datagram.png"):
            self.assertFalse(os.path.exists(os.path.join(out, f)), f"{f} left in {out}")
        with open(os.path.join(self.out, "results.md")) as f:
            table = f.read()
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertIn(table.rstrip(), md, "report.md carries results.md whole")
        for f in ["ratios.png"] + LAYER_FIGURES:
            self.assertIn(f"]({f})", md)
        self.assertNotIn("datagram.png", md)
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        for f in ["ratios.png"] + LAYER_FIGURES:
            self.assertIn(f'<img src="{f}"', page)
        self.assertNotIn("<script", page.lower())
        # Every case of the table is a row of the HTML table.
        for name in self.results:
            self.assertIn(f"<td class=\"left\">{name}</td>", page.replace("&quot;", '"'))

    def test_bounds_are_ratios_of_the_two_peers_of_each_round(self):
        got = {b["bound"]: b for b in compare.bounds(self.results, LAT_SIZES, LIMITS)}
        # Latency bounds only for the small sizes, where a ring message is one WRITE.
        # am_lat RC's: over WRITE at its small sizes (8 B and up), over SEND at 8 B only (the one
        # size with a raw SEND row).
        small = [s for s in LAT_SIZES if s <= compare.SMALL_MAX]
        am_small = {max(s, 8) for s in small}
        self.assertEqual(len(got), len(small) + len(am_small) + 1 + 1)
        self.assertIn("ib_write_lat / ucx_perftest am_lat, 64 B", got)
        self.assertNotIn("ib_send_lat / ucx_perftest am_lat, 64 B", got)
        self.assertNotIn("ib_write_lat / ib_send_lat, 1024 B", got)
        # Both peers of a latency bound made up alike: 11 + size / 1000 every round.
        self.assertAlmostEqual(got["ib_write_lat / ib_send_lat, 8 B"]["ratio_median"], 1.0)
        ud = got["raw UD at the path MTU / rstream, 64 KiB"]
        self.assertEqual((ud["a"], ud["b"]), (f"ib_send_bw -c UD -s 1024 {compare.RAW_UD_BW_FLAGS}", "rstream bw"))
        # Peers that differ: A over B per round, then the median and spread of those.
        self.results["ep_lat 8 B vs WRITE"]["peer_values"] = [9.9, 9.0]
        self.results["ep_lat 8 B"]["peer_values"] = [11.0, 10.0]
        self.results["am_lat RC 8 B vs raw SEND"]["peer_values"] = [11.0, 12.0]
        self.results["am_lat RC 8 B"]["peer_values"] = [10.0, 10.0]
        self.results["stream_bw 65536 B vs raw UD 1024 B"]["peer_values"] = [20.0, 30.0]
        self.results["stream_bw 65536 B"]["peer_values"] = [40.0, 30.0]
        got = {b["bound"]: b for b in compare.bounds(self.results, LAT_SIZES, LIMITS)}
        self.assertAlmostEqual(got["ib_write_lat / ib_send_lat, 8 B"]["ratio_median"], 0.9)
        self.assertAlmostEqual(got["ib_send_lat / ucx_perftest am_lat, 8 B"]["ratio_median"], 1.15)
        self.assertAlmostEqual(got["ib_write_lat / ucx_perftest am_lat, 8 B"]["ratio_median"], 0.945)
        ud = got["raw UD at the path MTU / rstream, 64 KiB"]
        self.assertEqual([round(ud[k], 6) for k in ("ratio_median", "ratio_min", "ratio_max")], [0.75, 0.5, 1.0])
        # A row that did not run bounds nothing.
        del self.results["stream_bw 65536 B"]
        self.assertNotIn("raw UD at the path MTU / rstream, 64 KiB",
                         {b["bound"] for b in compare.bounds(self.results, LAT_SIZES, LIMITS)})
        with open(os.path.join(self.out, "results.md")) as f:
            self.assertIn("| ib_write_lat / ib_send_lat, 8 B | **1.000** |", f.read())

    def test_the_median_ratio_has_its_interval_from_six_rounds(self):
        x = self.results["ep_lat 8 B"]
        rows = {r["case"]: r for r in compare.summarize(self.results)}
        self.assertIsNone(rows["ep_lat 8 B"]["ratio_lo"], "2 rounds: no 95% interval")
        with open(os.path.join(self.out, "results.md")) as f:
            self.assertRegex(f.read(), r"\| ep_lat 8 B \| .* \| \*\*0\.\d+\*\* \| - \| ")
        x["unet"] = [10.0, 9.0, 12.0, 11.0, 13.0, 8.0, 14.0]
        x["peer_values"] = [10.0] * 7
        row = {r["case"]: r for r in compare.summarize(self.results)}["ep_lat 8 B"]
        # Ratios 0.8..1.4: the 7 rounds' interval is their 1st and 7th (98.4%; the 2nd and 6th
        # hold 87.5%).
        self.assertEqual((row["ratio_lo"], row["ratio_hi"], row["ratio_median"]), (0.8, 1.4, 1.1))
        self.assertEqual(compare.interval_text(row), "0.800..1.400")

    def test_the_issues_targets_are_judged_in_the_table(self):
        with open(os.path.join(self.out, "results.md")) as f:
            table = f.read()
        # Every pair's made-up ratio is (10 + rnd) / 11 or its inverse: 0.909 and 1.0 at 8 B.
        self.assertIn("| 21 | ep_lat 8 B vs WRITE <= 1.03 | 0.955 | - | met, fewer than 6 rounds: not "
                      "resolved |", table)
        with open(os.path.join(self.out, "results.json")) as f:
            judged = json.load(f)["targets"]
        self.assertEqual(len(judged), len(compare.targets.load()), "every target's case ran")

    def test_a_run_writes_the_figures_and_the_report(self):
        self.check_outputs(self.out)

    def test_no_plots_writes_the_tables_only_and_plots_py_draws_them_later(self):
        with tempfile.TemporaryDirectory() as bare:
            synthetic_run(bare, no_plots=True)
            self.assertEqual(sorted(os.listdir(bare)), ["results.json", "results.md"])
            got = subprocess.run([sys.executable, os.path.join(COMPARE_DIR, "plots.py"), bare],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(got.returncode, 0, got.stderr)
            for f in ["ratios.png", "report.md", "report.html"] + LAYER_FIGURES:
                self.assertTrue(os.path.exists(os.path.join(bare, f)), f)

    def test_plots_py_redraws_a_run_elsewhere(self):
        with tempfile.TemporaryDirectory() as other:
            got = subprocess.run([sys.executable, os.path.join(COMPARE_DIR, "plots.py"), self.out,
                                  "--out", other], capture_output=True, text=True, timeout=300)
            self.assertEqual(got.returncode, 0, got.stderr)
            for f in ("results.json", "results.md"):
                self.assertFalse(os.path.exists(os.path.join(other, f)))
            self.check_outputs(other)

    def test_every_default_case_has_a_panel_and_pairings_span_their_sizes(self):
        metrics = {m for m, _, _ in plots.PANELS}
        for name, x in self.results.items():
            self.assertIn(x["metric"], metrics, f"{name}: in no panel of its layer's figure")
        ep = plots.layer_panels(self.results, "endpoint")
        self.assertEqual(sorted(p[0] for p in ep["t_typical us"]["ep_lat vs WRITE"]), LAT_SIZES)
        da = plots.layer_panels(self.results, "direct")
        for test in ("da_write_lat", "da_read_lat"):
            self.assertEqual(sorted(p[0] for p in da["t_typical us"][test]), LAT_SIZES, test)
        am = plots.layer_panels(self.results, "am")
        self.assertEqual(sorted(p[0] for p in am["t_typical us"]["am_lat UD"]),
                         [8, 64, 256, 1000], "UD's sweep from 8 B, clipped to its 1000 B")
        self.assertFalse([k for m in ep.values() for k in m if "--noring" in k],
                         "variants stay out of the layer figures")
        self.assertEqual(sorted(p[0] for p in am["MsgRate Mpps"]["am_bw UD --batch 16"]),
                         [64, 1000], "UD's clipped 1000 B is a message rate, like 64 B")
        self.assertEqual([p[0] for p in am["BW average MB/s"]["am_bw RC --batch 16"]], [65535])


if __name__ == "__main__":
    unittest.main()
