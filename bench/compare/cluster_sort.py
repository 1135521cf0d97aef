#!/usr/bin/python3
"""bench/compare/cluster_sort.py: unet's sample sort beside the same sort written with MPI, on two
simulated hosts, phase by phase, with raw ib_write_bw between the two hosts' devices as the bound
for the bulk exchange.

  bench/compare/cluster_sort.py [--build build] [--keys 16777216] [--ranks 1,2,4,8] [--rounds 3]

Started outside a machine with rxe0 and rxe1, it runs itself inside `ci/rxe-vm --two-dev`. For each
round and each rank count P, in turn: uam/examples' sample_sort and bench/compare's
mpi_sample_sort (the same input, samples, splitters, phases and output lines; MPI_Gather,
MPI_Bcast, MPI_Alltoall, MPI_Alltoallv, MPI_Barrier) under Open MPI's mpirun on nodeA (rxe0) and
nodeB (rxe1) through ci/sim-hosts, ranks in blocks; then, between rxe1 and rxe0, perftest's
ib_write_bw one way and both ways (-b) with 1 MiB messages (the sort's store chunk), and the raw
latencies that bound the steps at 2 ranks: ib_send_lat with one rank's samples (8 x --samples
bytes) and with 8 B, and bench/verbs_pingpong --exchange (two SENDs crossing). Debian's Open MPI
runs over kernel TCP across the hosts and shared memory within one.

Reported, each the median over the rounds (emulated timings are noisy; ratios within a run are
what mean something):
  - every phase's seconds, unet and MPI (rank 0's clock; each phase ends at a barrier);
  - the latency-bound steps, twice: as they ran once in the sort (samples to rank 0 and splitters
    back: the sample phase less rank 0's sort of the samples; the bucket sizes), and alone after
    the sort, as OSU's benchmarks take a latency (the mean of many in a row after a warm-up: the
    barrier, samples and splitters, the bucket sizes); goal: MPI / unet >= 2;
  - the bulk exchange: every byte moved between ranks over the time from a barrier before the
    stores (MPI: MPI_Alltoallv) to one after them, all ranks together, beside ib_write_bw's
    bandwidth both ways; goal: unet / ib_write_bw >= 0.9.
Writes OUT/results.json (every run's figures) and OUT/results.md (the tables).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHASES = ("generate", "sample", "partition", "exchange", "local sort", "latency steps", "verify", "total")
PROGRAMS = ("unet", "mpi")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (default: build)")
    p.add_argument("--keys", type=int, default=16777216)
    p.add_argument("--samples", type=int, default=4096, help="samples per rank (both sorts' --samples)")
    p.add_argument("--ranks", default="1,2,4,8", help="rank counts (default: 1,2,4,8)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bw-iters", type=int, default=2000, help="ib_write_bw iterations (-n)")
    p.add_argument("--timeout", type=int, default=600, help="seconds each run may take")
    p.add_argument("--out", default=None, help="output directory (default: BUILD/compare/cluster_sort)")
    p.add_argument("--vm-timeout", type=int, default=5400, help="seconds the VM may run")
    a = p.parse_args()
    a.ranks = [int(x) for x in a.ranks.split(",")]
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out or os.path.join(a.build, "compare", "cluster_sort"))
    return a


def have_two_devices():
    return all(os.path.exists("/sys/class/infiniband/" + d) for d in ("rxe0", "rxe1"))


def run(cmd, timeout):
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        raise RunFailed("%s exited %d" % (os.path.basename(cmd[cmd.index("--") + 1]), r.returncode))
    return r.stdout, time.time() - t0


class RunFailed(Exception):
    """One program run that exited non-zero (its output went to stderr)."""


def number(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.stderr.write(text)
        raise SystemExit("cluster_sort: no %s in the output above" % what)
    return float(m.group(1))


def parse_sort(text, program):
    """The figures of one run of either sort (both print the same lines)."""
    if not re.search(r"^verified: ", text, re.M):
        sys.stderr.write(text)
        raise SystemExit("cluster_sort: %s did not verify" % program)
    f = {}
    for ph in PHASES:
        f[ph] = number(r"^  %s +([0-9.]+)" % re.escape(ph), text, "phase " + ph)
    f["samples_in_ms"] = number(r"samples in ([0-9.]+) ms", text, "samples-in time")
    f["sample_sort_ms"] = number(r"sorting them ([0-9.]+) ms", text, "sample sorting time")
    f["sizes_ms"] = number(r"sizes ([0-9.]+) ms", text, "sizes time")
    f["barrier_us"] = number(r"^  barrier: ([0-9.]+) us", text, "barrier time")
    f["samples_rep_us"] = number(r"^  samples and splitters: ([0-9.]+) us", text, "repeated samples time")
    f["sizes_rep_us"] = number(r"^  bucket sizes: ([0-9.]+) us", text, "repeated sizes time")
    f["bulk_s"] = number(r"moved by \w+: .* in total, in ([0-9.]+) s", text, "bulk time")
    f["bulk_mibs"] = number(r"moved by \w+: .* \(([0-9.]+) MiB/s, all ranks together\)", text, "bulk rate")
    # The latency-bound part of the sample phase: all of it but rank 0's sort of the samples.
    f["samples_splitters_ms"] = 1e3 * f["sample"] - f["sample_sort_ms"]
    return f


def client_server(tool, flags, timeout):
    """tool's server on rxe0 and its client on rxe1; returns the client's output."""
    server = subprocess.Popen([tool, "-d", "rxe0"] + flags, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    name = os.path.basename(tool)
    try:
        for attempt in range(10):  # the server listens once it has set up, a while under TCG
            time.sleep(1)
            r = subprocess.run([tool, "-d", "rxe1"] + flags + ["198.18.0.1"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=timeout)
            if r.returncode == 0 or "Couldn't connect" not in r.stdout:
                break
        if r.returncode != 0:
            sys.stderr.write(r.stdout)
            raise SystemExit("cluster_sort: %s exited %d" % (name, r.returncode))
    finally:
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return r.stdout


def ib_write_bw(bidirectional, iters, timeout, port):
    flags = ["-x", "1", "-s", "1048576", "-n", str(iters), "-F", "-p", str(port)] + (["-b"] if bidirectional else [])
    out = client_server("ib_write_bw", flags, timeout)
    # perftest's table: #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
    return number(r"^ *1048576 +[0-9]+ +[0-9.]+ +([0-9.]+)", out, "ib_write_bw average")


def typical_us(tool, size, iters, extra, timeout, port):
    """The typical latency (us) of tool's -s size row: perftest's table and verbs_pingpong's alike
    (#bytes #iterations t_min t_max t_typical ...)."""
    flags = ["-s", str(size), "-n", str(iters), "-p", str(port)] + extra
    out = client_server(tool, flags, timeout)
    return number(r"^ *%d +%d +[0-9.]+ +[0-9.]+ +([0-9.]+)" % (size, iters), out,
                  "%s -s %d typical latency" % (os.path.basename(tool), size))


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def ratio(a, b):
    return a / b if b else float("nan")


def main():
    a = parse_args()
    if not have_two_devices() and not os.environ.get("UNET_IN_VM"):
        cmd = [os.path.join(ROOT, "ci", "rxe-vm"), "--two-dev", "--mem", "4096", "--timeout", str(a.vm_timeout),
               "--", sys.executable, os.path.abspath(__file__), "--build", a.build, "--keys", str(a.keys),
               "--samples", str(a.samples), "--ranks", ",".join(map(str, a.ranks)), "--rounds", str(a.rounds),
               "--bw-iters", str(a.bw_iters),
               "--timeout", str(a.timeout), "--out", a.out]
        raise SystemExit(subprocess.call(cmd))
    if not have_two_devices():
        raise SystemExit("cluster_sort: needs rxe0 and rxe1 (ci/rxe-vm --two-dev)")
    binaries = {"unet": os.path.join(a.build, "uam", "examples", "sample_sort"),
                "mpi": os.path.join(a.build, "bench", "mpi_sample_sort")}
    verbs_pingpong = os.path.join(a.build, "bench", "verbs_pingpong")
    for b in list(binaries.values()) + [verbs_pingpong]:
        if not os.access(b, os.X_OK):
            raise SystemExit("cluster_sort: no %s (build it: cmake --build %s --target sample_sort mpi_sample_sort "
                             "verbs_pingpong)"
                             % (b, a.build))
    os.makedirs(a.out, exist_ok=True)
    sim = [os.path.join(ROOT, "ci", "sim-hosts"), "--timeout", str(a.timeout)]
    runs = {prog: {p: [] for p in a.ranks} for prog in PROGRAMS}
    failures = {prog: {p: [] for p in a.ranks} for prog in PROGRAMS}
    bw = {"one way": [], "both ways": []}
    raw = {"samples": [], "8 B": [], "exchange": []}  # typical latencies (us), rxe1 <-> rxe0
    for rnd in range(a.rounds):
        for p in a.ranks:
            order = PROGRAMS if rnd % 2 == 0 else tuple(reversed(PROGRAMS))
            for prog in order:
                try:
                    out, wall = run(sim + ["-np", str(p), "--", binaries[prog], "--keys", str(a.keys),
                                           "--samples", str(a.samples)], a.timeout + 30)
                except RunFailed as e:
                    # Kept out of the medians and counted in the tables: a failed run is a finding.
                    failures[prog][p].append(str(e))
                    print("round %d, %d ranks, %-4s: FAILED (%s)" % (rnd + 1, p, prog, e), flush=True)
                    continue
                f = parse_sort(out, prog)
                runs[prog][p].append(f)
                print("round %d, %d ranks, %-4s: total %.3f s, bulk %.1f MiB/s, barrier %.1f us (%.0f s with mpirun)"
                      % (rnd + 1, p, prog, f["total"], f["bulk_mibs"], f["barrier_us"], wall), flush=True)
        for both in (False, True):
            bw["both ways" if both else "one way"].append(
                ib_write_bw(both, a.bw_iters, a.timeout, 18600 + 2 * rnd + both))
        print("round %d: ib_write_bw rxe1 -> rxe0 %.1f MiB/s one way, %.1f both ways"
              % (rnd + 1, bw["one way"][-1], bw["both ways"][-1]), flush=True)
        port = 18700 + 4 * rnd
        raw["samples"].append(typical_us("ib_send_lat", 8 * a.samples, 500, ["-x", "1", "-F"], a.timeout, port))
        raw["8 B"].append(typical_us("ib_send_lat", 8, 2000, ["-x", "1", "-F"], a.timeout, port + 1))
        raw["exchange"].append(typical_us(verbs_pingpong, 8, 2000, ["--warmup", "200", "--exchange"],
                                          a.timeout, port + 2))
        print("round %d: ib_send_lat %d B %.1f us, 8 B %.1f us; verbs_pingpong --exchange 8 B %.1f us"
              % (rnd + 1, 8 * a.samples, raw["samples"][-1], raw["8 B"][-1], raw["exchange"][-1]), flush=True)

    keys = next(iter(f for prog in PROGRAMS for p in a.ranks for f in runs[prog][p]), {}).keys()
    med = {prog: {p: {k: median([f[k] for f in runs[prog][p]]) for k in keys} for p in a.ranks}
           for prog in PROGRAMS}
    bw_med = {k: median(v) for k, v in bw.items()}
    raw_med = {k: median(v) for k, v in raw.items()}
    md = ["# Sample sort, %d keys, on two simulated hosts (nodeA: rxe0, nodeB: rxe1), median of %d rounds"
          % (a.keys, a.rounds), "",
          "Seconds per phase on rank 0's clock (each phase ends at a barrier); MPI is Debian's Open MPI 4.1 "
          "(TCP between the hosts, shared memory within one).", "",
          "| ranks | program | runs ok / failed | " + " | ".join(PHASES) + " |",
          "|---|---|---|" + "---|" * len(PHASES)]
    for p in a.ranks:
        for prog in PROGRAMS:
            md.append("| %d | %s | %d / %d | " % (p, "unet" if prog == "unet" else "MPI", len(runs[prog][p]),
                                                 len(failures[prog][p]))
                      + " | ".join("%.3f" % med[prog][p][ph] for ph in PHASES) + " |")
    md += ["", "Latency-bound steps as they ran in the sort, once each, right after a long phase (goal: MPI / unet "
           ">= 2): samples to rank 0 and splitters back (the sample phase less rank 0's sort of the samples), "
           "the bucket sizes.", "",
           "| ranks | samples + splitters unet / MPI (ms) | MPI/unet | sizes unet / MPI (ms) | MPI/unet |",
           "|---|---|---|---|---|"]
    for p in a.ranks:
        u, m = med["unet"][p], med["mpi"][p]
        md.append("| %d | %.3f / %.3f | %.2f | %.3f / %.3f | %.2f |" % (
            p, u["samples_splitters_ms"], m["samples_splitters_ms"],
            ratio(m["samples_splitters_ms"], u["samples_splitters_ms"]),
            u["sizes_ms"], m["sizes_ms"], ratio(m["sizes_ms"], u["sizes_ms"])))
    md += ["", "The same steps alone after the sort, as OSU's benchmarks take a latency (goal: MPI / unet >= 2; "
           "us, the mean of many in a row after a warm-up: barrier 200 after 20, samples and splitters 50 after "
           "10, bucket sizes 200 after 20).", "",
           "| ranks | barrier unet / MPI | MPI/unet | samples + splitters unet / MPI | MPI/unet "
           "| bucket sizes unet / MPI | MPI/unet |", "|---|---|---|---|---|---|---|"]
    for p in a.ranks:
        u, m = med["unet"][p], med["mpi"][p]
        md.append("| %d | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f |" % (
            p, u["barrier_us"], m["barrier_us"], ratio(m["barrier_us"], u["barrier_us"]),
            u["samples_rep_us"], m["samples_rep_us"], ratio(m["samples_rep_us"], u["samples_rep_us"]),
            u["sizes_rep_us"], m["sizes_rep_us"], ratio(m["sizes_rep_us"], u["sizes_rep_us"])))
    md += ["", "Raw verbs between rxe1 and rxe0 in the same run (typical, us): ib_send_lat -s %d (one rank's "
           "samples, one way) %.1f; ib_send_lat -s 8 %.1f; bench/verbs_pingpong --exchange -s 8 (both sides "
           "send, then wait) %.1f. With one rank per host (2 ranks) no barrier or bucket-size exchange can take "
           "less than the exchange, and no samples-and-splitters step less than the two one-way figures, %.1f."
           % (8 * a.samples, raw_med["samples"], raw_med["8 B"], raw_med["exchange"],
              raw_med["samples"] + raw_med["8 B"])]
    md += ["", "Bulk exchange, all ranks together (MiB/s; goal: unet / ib_write_bw both ways >= 0.9). "
           "ib_write_bw rxe1 -> rxe0, 1 MiB messages: %.1f MiB/s one way, %.1f both ways."
           % (bw_med["one way"], bw_med["both ways"]), "",
           "| ranks | unet stores | MPI_Alltoallv | unet / ib_write_bw both ways | unet / ib_write_bw one way |",
           "|---|---|---|---|---|"]
    for p in a.ranks:
        u, m = med["unet"][p]["bulk_mibs"], med["mpi"][p]["bulk_mibs"]
        md.append("| %d | %.1f | %.1f | %.2f | %.2f |" % (p, u, m, ratio(u, bw_med["both ways"]),
                                                           ratio(u, bw_med["one way"])))
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"keys": a.keys, "ranks": a.ranks, "rounds": a.rounds, "runs": runs, "failures": failures,
                   "ib_write_bw": bw, "raw_latency_us": raw,
                   "median": med, "ib_write_bw_median": bw_med, "raw_latency_us_median": raw_med}, f, indent=1)
    print(text)
    if any(failures[prog][p] for prog in PROGRAMS for p in a.ranks):
        raise SystemExit("cluster_sort: some runs failed (see the tables)")


if __name__ == "__main__":
    main()
