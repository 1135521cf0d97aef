#!/usr/bin/env python3
"""bench/ring/geometry_sweep.py: what a ring channel's geometry (slots x slot bytes) buys.

Runs unet_perf ep_lat (half round trip) and ep_bw (message rate, --batch 16) on RC ring channels
of each geometry, plus the same channel --noring, in interleaved rounds on one device, and prints
per case the median over rounds of each geometry's figure divided by the --base geometry's (core's
default, 64x256) in the same round. Run where an RDMA device exists, e.g. `ci/rxe-vm --
bench/ring/geometry_sweep.py --build build-release`. The chosen defaults and the figures are in
core/README.md ("Ring channels").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LAT_SIZES = (8, 64, 1000)
BW_SIZES = (64, 1000)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="unet build directory (holds bench/unet_perf)")
    p.add_argument("--device", default="", help="RDMA device (default: the first)")
    p.add_argument("--geometries", default="16x256,256x256,64x512,64x1024,64x4096",
                   help="SLOTSxBYTES, comma-separated, run beside --base")
    p.add_argument("--base", default="64x256", help="the geometry the others are divided by (core's default)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--lat-iters", type=int, default=5000)
    p.add_argument("--bw-iters", type=int, default=20000)
    p.add_argument("--timeout", type=int, default=120, help="seconds for any one process")
    a = p.parse_args()
    a.geometries = [g for g in a.geometries.split(",") if g]
    if a.base not in a.geometries:
        a.geometries.insert(0, a.base)
    for g in a.geometries:
        slots, _, size = g.partition("x")
        if not (slots.isdigit() and size.isdigit()):
            p.error(f"--geometries: '{g}' is not SLOTSxBYTES")
    return a


class Runner:
    def __init__(self, a):
        self.a = a
        self.perf = os.path.join(a.build, "bench", "unet_perf")
        self.port = 19300
        self.tmp = tempfile.mkdtemp(prefix="geometry_sweep.")

    def run(self, test, size, geometry):
        """One client/server pair; the client's JSON result for `size`."""
        self.port += 1
        iters = self.a.lat_iters if test == "ep_lat" else self.a.bw_iters
        args = [self.perf, "--test", test, "-c", "RC", "-s", str(size), "-n", str(iters), "-p", str(self.port),
                "--timeout_ms", str(self.a.timeout * 1000)]
        if self.a.device:
            args += ["-d", self.a.device]
        if test == "ep_bw":
            args += ["--batch", "16"]
        if geometry == "noring":
            args += ["--noring"]
        else:
            slots, _, slot_bytes = geometry.partition("x")
            args += ["--ring_slots", slots, "--ring_slot_bytes", slot_bytes]
        out = os.path.join(self.tmp, "client.json")
        server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(0.5)
        client = subprocess.run(args + ["--json", out, "127.0.0.1"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=self.a.timeout)
        server_out = server.communicate(timeout=self.a.timeout)[0]
        if client.returncode != 0 or server.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{client.stdout[-1500:]}\n{server_out[-1500:]}")
        with open(out) as f:
            r = json.load(f)["results"][0]
        return r["t_typical"] if test == "ep_lat" else r["MsgRate"]


def main():
    a = parse_args()
    r = Runner(a)
    cases = [("ep_lat", s) for s in LAT_SIZES] + [("ep_bw", s) for s in BW_SIZES]
    columns = a.geometries + ["noring"]
    values = {(c, g): [] for c in cases for g in columns}
    for n in range(1, a.rounds + 1):
        for case in cases:
            for g in columns:
                values[(case, g)].append(r.run(case[0], case[1], g))
            row = "  ".join(f"{g} {values[(case, g)][-1]:.3f}" for g in columns)
            print(f"round {n}: {case[0]} {case[1]} B: {row}", flush=True)
    unit = {"ep_lat": "us, lower is better", "ep_bw": "Mpps, higher is better"}
    print(f"\nmedian of per-round ratios to {a.base} over {a.rounds} rounds ({a.build}; ep_lat: "
          f"{unit['ep_lat']}; ep_bw --batch 16: {unit['ep_bw']})\n")
    print("| case | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for case in cases:
        base = values[(case, a.base)]
        cells = []
        for g in columns:
            ratio = statistics.median(v / b for v, b in zip(values[(case, g)], base))
            cells.append(f"{ratio:.3f}" + (f" ({statistics.median(base):.3f})" if g == a.base else ""))
        print(f"| {case[0]} {case[1]} B | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
