#!/usr/bin/python3
"""bench/compare/cluster_sort.py: unet's sample sort beside the same sort written with MPI, on two
simulated hosts, phase by phase, with raw ib_write_bw between the two hosts' devices as the bound
for the bulk exchange.

  bench/compare/cluster_sort.py [--build build] [--keys 16777216] [--ranks 1,2,4,8] [--rounds 3]

Started outside a machine with rxe0 and rxe1, it runs itself inside `ci/rxe-vm --two-dev`. For each
round and each rank count P, in turn: uam/examples' sample_sort and bench/compare's
mpi_sample_sort (the same input, samples, splitters, phases and output lines; MPI_Gather,
MPI_Bcast, MPI_Alltoall, MPI_Alltoallv, MPI_Barrier) under Open MPI's mpirun on nodeA (rxe0) and
nodeB (rxe1) through ci/sim-hosts, ranks in blocks; then perftest's ib_write_bw from rxe1 to rxe0,
one way and both ways (-b), with 1 MiB messages (the sort's store chunk). Debian's Open MPI runs
over kernel TCP across the hosts and shared memory within one.

Reported, each the median over the rounds (emulated timings are noisy; ratios within a run are
what mean something):
  - every phase's seconds, unet and MPI (rank 0's clock; each phase ends at a barrier);
  - the latency-bound steps: samples to rank 0 and splitters back (the sample phase less rank 0's
    sort of the samples), the bucket sizes, one barrier (the mean of 200 in a row after 20, as
    osu_barrier); goal: MPI / unet >= 2;
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
PHASES = ("generate", "sample", "partition", "exchange", "local sort", "barriers", "verify", "total")
PROGRAMS = ("unet", "mpi")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (default: build)")
    p.add_argument("--keys", type=int, default=16777216)
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
        raise RunFailed("%s exited %d" % (os.path.basename(cmd[-3]), r.returncode))
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
    f["bulk_s"] = number(r"moved by \w+: .* in total, in ([0-9.]+) s", text, "bulk time")
    f["bulk_mibs"] = number(r"moved by \w+: .* \(([0-9.]+) MiB/s, all ranks together\)", text, "bulk rate")
    # The latency-bound part of the sample phase: all of it but rank 0's sort of the samples.
    f["samples_splitters_ms"] = 1e3 * f["sample"] - f["sample_sort_ms"]
    return f


def ib_write_bw(bidirectional, iters, timeout, port):
    flags = ["-x", "1", "-s", "1048576", "-n", str(iters), "-F", "-p", str(port)] + (["-b"] if bidirectional else [])
    server = subprocess.Popen(["ib_write_bw", "-d", "rxe0"] + flags, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        for attempt in range(10):  # the server listens once it has set up, a while under TCG
            time.sleep(1)
            r = subprocess.run(["ib_write_bw", "-d", "rxe1"] + flags + ["198.18.0.1"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=timeout)
            if r.returncode == 0 or "Couldn't connect" not in r.stdout:
                break
        if r.returncode != 0:
            sys.stderr.write(r.stdout)
            raise SystemExit("cluster_sort: ib_write_bw exited %d" % r.returncode)
    finally:
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    # perftest's table: #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
    return number(r"^ *1048576 +[0-9]+ +[0-9.]+ +([0-9.]+)", r.stdout, "ib_write_bw average")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def ratio(a, b):
    return a / b if b else float("nan")


def main():
    a = parse_args()
    if not have_two_devices() and not os.environ.get("UNET_IN_VM"):
        cmd = [os.path.join(ROOT, "ci", "rxe-vm"), "--two-dev", "--mem", "4096", "--timeout", str(a.vm_timeout),
               "--", sys.executable, os.path.abspath(__file__), "--build", a.build, "--keys", str(a.keys),
               "--ranks", ",".join(map(str, a.ranks)), "--rounds", str(a.rounds), "--bw-iters", str(a.bw_iters),
               "--timeout", str(a.timeout), "--out", a.out]
        raise SystemExit(subprocess.call(cmd))
    if not have_two_devices():
        raise SystemExit("cluster_sort: needs rxe0 and rxe1 (ci/rxe-vm --two-dev)")
    binaries = {"unet": os.path.join(a.build, "uam", "examples", "sample_sort"),
                "mpi": os.path.join(a.build, "bench", "mpi_sample_sort")}
    for b in binaries.values():
        if not os.access(b, os.X_OK):
            raise SystemExit("cluster_sort: no %s (build it: cmake --build %s --target uam_sample_sort mpi_sample_sort)"
                             % (b, a.build))
    os.makedirs(a.out, exist_ok=True)
    sim = [os.path.join(ROOT, "ci", "sim-hosts"), "--timeout", str(a.timeout)]
    runs = {prog: {p: [] for p in a.ranks} for prog in PROGRAMS}
    failures = {prog: {p: [] for p in a.ranks} for prog in PROGRAMS}
    bw = {"one way": [], "both ways": []}
    for rnd in range(a.rounds):
        for p in a.ranks:
            order = PROGRAMS if rnd % 2 == 0 else tuple(reversed(PROGRAMS))
            for prog in order:
                try:
                    out, wall = run(sim + ["-np", str(p), "--", binaries[prog], "--keys", str(a.keys)],
                                    a.timeout + 30)
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

    keys = next(iter(f for prog in PROGRAMS for p in a.ranks for f in runs[prog][p]), {}).keys()
    med = {prog: {p: {k: median([f[k] for f in runs[prog][p]]) for k in keys} for p in a.ranks}
           for prog in PROGRAMS}
    bw_med = {k: median(v) for k, v in bw.items()}
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
    md += ["", "Latency-bound steps (goal: MPI / unet >= 2): samples to rank 0 and splitters back (the sample "
           "phase less rank 0's sort of the samples), the bucket sizes, one barrier (the mean of 200 in a row "
           "after 20).", "",
           "| ranks | samples + splitters unet / MPI (ms) | MPI/unet | sizes unet / MPI (ms) | MPI/unet "
           "| barrier unet / MPI (us) | MPI/unet |", "|---|---|---|---|---|---|---|"]
    for p in a.ranks:
        u, m = med["unet"][p], med["mpi"][p]
        md.append("| %d | %.3f / %.3f | %.2f | %.3f / %.3f | %.2f | %.1f / %.1f | %.2f |" % (
            p, u["samples_splitters_ms"], m["samples_splitters_ms"],
            ratio(m["samples_splitters_ms"], u["samples_splitters_ms"]),
            u["sizes_ms"], m["sizes_ms"], ratio(m["sizes_ms"], u["sizes_ms"]),
            u["barrier_us"], m["barrier_us"], ratio(m["barrier_us"], u["barrier_us"])))
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
                   "ib_write_bw": bw,
                   "median": med, "ib_write_bw_median": bw_med}, f, indent=1)
    print(text)
    if any(failures[prog][p] for prog in PROGRAMS for p in a.ranks):
        raise SystemExit("cluster_sort: some runs failed (see the tables)")


if __name__ == "__main__":
    main()
