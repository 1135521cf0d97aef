#!/usr/bin/python3
"""bench/compare: unet beside the tools users trust, in one run on one device.

Runs every unet_perf test and its peer — perftest's ib_send_lat, ib_write_lat, ib_read_lat,
ib_send_bw, ib_write_bw for the endpoint tests (RC channels are ring channels, unet_perf's default:
ep_lat also beside ib_write_lat, the raw WRITE ping-pong that bounds them, and ep_lat, ep_bw,
am_lat RC and stream_lat RC again with --noring, SEND/RECV only; ep_lat over UD beside ib_send_lat -c UD
up to 64 B), ucx_perftest over rc_verbs (-t am_lat, -t am_bw)
for the active-message tests on unet RC and UD, and over ud_verbs beside unet UD (and uam over UD
beside ib_send_lat/ib_send_bw -c UD, what the device's UD path costs by itself); for the
user-level protocols (ulp, on UD) raw UD (ib_send_lat -c UD beside stream_lat 64 B), rsockets'
rstream (stream_lat 64 B and stream_bw 64 KiB, copied and zero-copy) and the kernel's TCP and UDP over the VM's veth
(sockperf ping-pong: stream_lat and dgram_lat 64 B) — with the same sizes and iteration counts,
interleaved (the order of each pair alternates between rounds; a peer run that several cases
share, the same tool with the same size and iterations, runs once per round), for several
rounds, and reports for each pair the median of the rounds and the median unet / peer ratio with
the 95% interval of that median (median_interval.py; from 6 rounds) and its spread (min..max over
rounds): emulated timings are noisy, ratios within one run are what mean something. Context peers
that have no unet twin run once per round beside them: rsockets
(rstream) and kernel TCP over the VM's veth (sockperf ping-pong) at the latency sizes. --tests runs a subset (e.g. --tests
am_lat,am_bw). The latency tests of the endpoint, direct access and active messages run over a
sweep of sizes (--lat-sizes, 2 B to 4 KiB; perftest -a goes to 8 MiB), the plots' latency curves.

User-level protocols: rstream's latency is its ping-pong (-I iterations of one transfer each way,
usec/xfer = half round trip, as unet's t_typical median is of half round trips); its bandwidth is
-C transfers of -S bytes one way then back, whose Gb/s (10^9 bits) is converted to MB/s (2^20
bytes) for unet's BW average. sockperf runs for a fixed time (2 s) and reports the median half
round trip. rstream and sockperf need --address (the device's netdev address; the kernel's
sockets and rsockets use it, over the veth).

Active messages: unet's -s is the payload, behind a 16-byte header and one argument word;
ucx_perftest's -s is the whole message, its 8-byte AM header included (short up to 64 bytes, else
bcopy; above its 8 KiB bounce buffers UCX_RC_VERBS_SEG_SIZE is raised to fit). Both run the same
credit window (--am-window: unet's --window, ucx_perftest's -W) and warm-up. The am sizes are
clipped to what uam carries: 65535 bytes on RC, the path MTU less 24 bytes on UD (unet_perf
--limits); ucx_perftest runs the same clipped size.

Bounds: where a raw operation carries a unet case, the table below the pairs gives that operation's
peer over the case's own peer, per round (BOUNDS): ib_write_lat / ib_send_lat (a ring message is
one WRITE of more bytes than its payload), ib_send_lat and ib_write_lat / ucx_perftest am_lat
(uam's request and reply are one SEND or one ring WRITE each) and raw UD SENDs of one path MTU with
a post list of 16 / rstream (the UD stream is such SENDs). A unet / peer target below that ratio
(latency) or above it (rates) is beyond what the device does.

Targets: the issues' speed targets (targets.json, --targets) judged on the run by targets.py: met
or not by the median, resolved or not by its interval, and beyond the device or not where a bound
caps the case.

Writes OUT/results.json (every sample, the configuration, the verdicts) and OUT/results.md (the
tables); then plots.py draws from them OUT/endpoint.png, direct.png, am.png, stream.png,
datagram.png (a figure per layer with data), OUT/ratios.png (every case's unet / peer ratio) and
OUT/report.md, report.html (the tables and the figures; needs python3-matplotlib), unless
--no-plots.

Run where an RDMA device exists (a NIC, host rxe, or inside ci/rxe-vm); ci/main.sh does that.
Every process is bounded by a timeout; a tool that fails or prints no figure fails the run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import plots  # bench/compare/plots.py: the figures and the report
import median_interval  # bench/compare/median_interval.py
import targets  # bench/compare/targets.py: the issues' targets judged on a run

LAT, BW = "lat", "bw"
ULP_TESTS = ("dgram_lat", "stream_lat", "stream_bw")
# The ulp pairs' sizes, as the issue names them: 64-byte ping-pongs, 64 KiB stream messages.
ULP_LAT_SIZE, ULP_BW_SIZE = 64, 65536
# Latency over a sweep of sizes, as perftest -a (2 bytes to 8 MiB) but shorter for a VM run:
# across the ring channel's 256-byte slots and the path MTU. ulp's pairs stay at their 64 bytes.
LAT_SIZES = "2,8,64,256,1024,4096"
# unet_perf's default warm-up iterations, which ucx_perftest is given too (-w).
WARMUP = {LAT: 100, BW: 0}
# UCT's rc_verbs bcopy/zcopy active messages fit its bounce buffers (UCX_RC_VERBS_SEG_SIZE, 8256
# bytes by default, less a 1-byte header).
UCX_AM_BCOPY_MAX = 8255


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", required=True, help="unet build directory (holds bench/unet_perf)")
    p.add_argument("--device", default=os.environ.get("UNET_DEVICE", ""), help="RDMA device (default: first)")
    p.add_argument("--gid", type=int, default=None, help="GID index (default: the library's choice, as unet_perf --limits prints it)")
    p.add_argument("--address", default=os.environ.get("UNET_RXE_ADDR0", ""),
                   help="IP address of the device's netdev, for rstream and sockperf (skipped if empty)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lat-iters", type=int, default=2000)
    p.add_argument("--bw-iters", type=int, default=2000)
    p.add_argument("--lat-sizes", default=LAT_SIZES)
    p.add_argument("--bw-sizes", default="64,65536")
    p.add_argument("--port", type=int, default=18515)
    p.add_argument("--timeout", type=int, default=300, help="seconds for any one process")
    p.add_argument("--no-context", action="store_true", help="skip rstream and sockperf")
    p.add_argument("--tests", default=None,
                   help="unet_perf tests to pair, comma-separated (default all that "
                        "unet_perf --list-tests prints)")
    p.add_argument("--am-window", type=int, default=8,
                   help="credit window of am_bw, both sides (unet --window, ucx_perftest -W; default uam's 8)")
    p.add_argument("--out", default=None, help="output directory (default BUILD/compare)")
    p.add_argument("--no-plots", action="store_true",
                   help="write results.json and results.md only; `plots.py OUT` draws the rest later "
                        "(matplotlib in ci/rxe-vm takes about as long as a 1-round run)")
    p.add_argument("--targets", default=targets.DEFAULT,
                   help="targets to judge the run by (default bench/compare/targets.json; '' for none)")
    a = p.parse_args()
    if a.rounds < 1 or a.lat_iters < 1 or a.bw_iters < 1:
        p.error("--rounds and iteration counts must be positive")
    if not 1 <= a.am_window <= 127:
        p.error("--am-window is uam's credit window, 1..127")
    if a.targets:  # read now: a bad file must not end a long run at its last step
        try:
            targets.load(a.targets)
        except (OSError, ValueError) as e:  # json's errors are ValueErrors
            p.error(f"--targets {a.targets}: {e}")
    a.unet_perf = os.path.join(a.build, "bench", "unet_perf")
    if not os.access(a.unet_perf, os.X_OK):
        p.error(f"{a.unet_perf} is not built")
    # unet_perf's own test table, one name a line.
    listed = subprocess.run([a.unet_perf, "--list-tests"], capture_output=True, text=True,
                            timeout=60)
    tests = listed.stdout.split()
    if listed.returncode != 0 or not tests:
        p.error(f"{a.unet_perf} --list-tests failed: {listed.stderr.strip()}")
    a.tests = [t for t in (",".join(tests) if a.tests is None else a.tests).split(",") if t]
    unknown = [t for t in a.tests if t not in tests]
    if unknown or not a.tests:
        p.error(f"--tests takes some of {','.join(tests)}, not {','.join(unknown) or 'nothing'}")
    try:
        a.lat_sizes = [int(s) for s in a.lat_sizes.split(",")]
        a.bw_sizes = [int(s) for s in a.bw_sizes.split(",")]
    except ValueError:
        p.error("sizes are comma-separated byte counts")
    if not a.device:  # first: without a device there is no address either
        devs = sorted(os.listdir("/sys/class/infiniband")) if os.path.isdir("/sys/class/infiniband") else []
        if not devs:
            print("compare: no RDMA device (run inside ci/rxe-vm, or set up rxe: ci/rxe-host)", file=sys.stderr)
            # 77: "skipped" to ctest, unless UNET_REQUIRE_DEVICE=1 makes a missing device a failure.
            sys.exit(1 if os.environ.get("UNET_REQUIRE_DEVICE") == "1" else 77)
        a.device = devs[0]
    if any(t in ULP_TESTS for t in a.tests) and not a.address:
        p.error("dgram_lat, stream_lat and stream_bw pair with rstream and sockperf, which need --address "
                "(or UNET_RXE_ADDR0): the IP address of the device's netdev")
    a.out = a.out or os.path.join(a.build, "compare")
    if a.gid is None:
        a.gid = library_gid(a.unet_perf, a.device)
    return a


def library_gid(unet_perf, device):
    """The GID index the library chooses on `device` (perftest's rule: the first IPv4-mapped
    RoCE v2 GID, else the best valid one), as unet_perf --limits prints it: one choice for
    unet and the perftest runs it is passed to."""
    out = subprocess.run([unet_perf, "--test", "ep_lat", "--limits", "-d", device],
                         capture_output=True, text=True, timeout=60)
    for line in out.stdout.splitlines():
        if line.startswith("gid_index "):
            return int(line.split()[1])
    raise SystemExit(f"compare: {unet_perf} --limits chose no GID on {device}: {out.stderr.strip()}")


class ToolError(RuntimeError):
    pass


def pinning():
    """Server and client on different CPUs when there are two: two busy-polling processes on one
    CPU (or a VM's vCPU) take turns by scheduler tick, and medians jump to milliseconds."""
    import shutil
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        return ["taskset", "-c", "0"], ["taskset", "-c", "1"]
    return [], []


PIN_SERVER, PIN_CLIENT = pinning()


def listening(port, udp=False):
    """Whether a local socket listens on TCP `port` (with `udp`: is bound to UDP `port`), by
    /proc/net's tables."""
    want = f":{port:04X}"
    for table in (("udp", "udp6") if udp else ("tcp", "tcp6")):
        try:
            with open(f"/proc/net/{table}") as f:
                next(f)
                for line in f:
                    local, state = line.split()[1], line.split()[3]
                    if local.endswith(want) and (udp or state == "0A"):
                        return True
        except OSError:
            pass
    return False


def await_server(srv, port, limit, udp=False):
    """Waits until server process `srv` listens on `port` (at most `limit` s; a server that exits
    first ends the wait, and the client then reports the failure). Without a port (rsockets
    listen outside the kernel's tables), waits `limit` s."""
    if port is None:
        time.sleep(limit)
        return
    end = time.monotonic() + limit
    while time.monotonic() < end and srv.poll() is None and not listening(port, udp):
        time.sleep(0.02)


def run_pair(server, client, timeout, port=None, env=None):
    """Starts `server`, waits until it listens on TCP `port` (perftest's server may take over
    1 s under TCG; no port: 2 s), runs `client`; returns the client's output. Both bounded by
    `timeout`; `env` adds environment variables to both."""
    server, client = PIN_SERVER + server, PIN_CLIENT + client
    env = {**os.environ, **env} if env else None
    srv = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        await_server(srv, port, min(timeout, 30) if port is not None else 2.0)
        try:
            cli = subprocess.run(client, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(client)}: no result within {timeout} s")
        try:
            srv_out, _ = srv.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(server)}: server did not finish within {timeout} s; the client "
                            f"exited {cli.returncode}:\n{cli.stdout[-1500:]}")
        if cli.returncode != 0 or srv.returncode != 0:
            raise ToolError(f"{' '.join(client)} exited {cli.returncode} (server {srv.returncode}):\n"
                            f"{cli.stdout[-2000:]}\n--- server:\n{srv_out[-1000:]}")
        return cli.stdout
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def table_row(out, size, columns):
    """The row for `size` of a perftest-format table (unet_perf prints the same)."""
    for line in out.splitlines():
        f = line.split()
        if len(f) >= columns and f[0] == str(size) and re.fullmatch(r"[0-9.]+", f[2]):
            return f
    raise ToolError(f"no {size}-byte row in:\n{out[-1500:]}")


def perftest_latency(out, size):
    value = table_row(out, size, 9)[4]  # t_typical (median)
    if not re.fullmatch(r"[0-9.]+", value):
        raise ToolError(f"latency '{value}' for {size} B")  # perftest prints "inf" at times
    return float(value)


def perftest_bw(out, size):
    f = table_row(out, size, 5)
    return float(f[3]), float(f[4])  # BW average [MB/s], MsgRate [Mpps]


def ucx_final(out):
    """ucx_perftest's closing row: iterations, latency 50%ile / average / overall [us], bandwidth
    average / overall [MB/s, MB = 2^20], message rate average / overall [msg/s]. "average" is the
    last report interval, "overall" the whole run."""
    for line in out.splitlines():
        if line.startswith("Final:"):
            return [float(x) for x in line.split()[1:]]
    raise ToolError(f"no 'Final:' line in:\n{out[-1500:]}")


class Runner:
    def __init__(self, a):
        self.a = a
        self.port = a.port

    def next_port(self):
        """A fresh TCP port per pair (cycling through 200), so a slow socket close never collides."""
        self.port = self.a.port + (self.port - self.a.port + 1) % 200
        return self.port

    def perftest(self, tool, size, iters):
        """A perftest pair; `tool` may carry flags of its own ("ib_send_bw -c UD"), its own -s too."""
        port = str(self.next_port())
        own_size = [] if "-s" in tool.split() else ["-s", str(size)]
        own_iters = [] if "-n" in tool.split() else ["-n", str(iters)]
        cmd = [*tool.split(), "-d", self.a.device, "-x", str(self.a.gid), *own_size, *own_iters, "-p", port, "-F"]
        return run_pair(cmd, cmd + ["127.0.0.1"], self.a.timeout, port=int(port))

    def unet(self, test, size, iters, extra=()):
        port = str(self.next_port())
        cmd = [self.a.unet_perf, "--test", test, "-d", self.a.device, "-x", str(self.a.gid), "-s", str(size),
               "-n", str(iters), "-p", port, "--timeout_ms", str(self.a.timeout * 1000), *extra]
        return run_pair(cmd, cmd + ["127.0.0.1"], self.a.timeout, port=int(port))

    def ucx(self, test, size, iters, warmup, transport="rc_verbs"):
        port = str(self.next_port())
        cmd = ["ucx_perftest", "-p", port]
        # UCT's short active messages carry at most a few dozen bytes on rc_verbs; larger ones are
        # bcopy (copied into a bounce buffer, as unet's base-level endpoint copies into its segment).
        layout = "short" if size <= 64 else "bcopy"
        client = cmd + ["127.0.0.1", "-d", f"{self.a.device}:1", "-x", transport, "-t", test, "-D", layout,
                        "-s", str(size), "-n", str(iters), "-w", str(warmup), "-W", str(self.a.am_window)]
        # The GID every other tool uses (UCX's own choice could differ on a NIC with several).
        env = {"UCX_IB_GID_INDEX": str(self.a.gid)}
        if transport == "ud_verbs":
            # UCX 1.13 drops every UD arrival on rxe by its check of the GRH's destination GID
            # (the endpoint then dies of "unhandled timeout"); a NIC passes it.
            env["UCX_UD_VERBS_ETH_DGID_CHECK"] = "n" if self.a.device.startswith("rxe") else "y"
        if size > UCX_AM_BCOPY_MAX:
            env["UCX_RC_VERBS_SEG_SIZE"] = str(size + 4096)
        return run_pair(cmd, client, self.a.timeout, port=int(port), env=env)

    def peer(self, tool, kind, size, iters):
        """The peer of a case: a perftest tool, "ucx_perftest TEST", "rstream lat|bw" or
        "sockperf TCP|UDP"; returns its output (figures() reads it)."""
        if tool.startswith("ucx_perftest "):  # "ucx_perftest TEST [TRANSPORT]", rc_verbs by default
            return self.ucx(*tool.split()[1:2], size, iters, WARMUP[kind], *tool.split()[2:3])
        if tool.startswith("rstream "):
            return self.rstream_out(size, iters, tool.split()[1])
        if tool.startswith("sockperf "):
            return self.sockperf_out(size, tool.split()[1])
        return self.perftest(tool, size, iters)

    def limit(self, test, transport):
        """The largest -s unet_perf takes for `test` on `transport` on this device (--limits)."""
        cmd = [self.a.unet_perf, "--test", test, "-c", transport, "-d", self.a.device, "-x", str(self.a.gid),
               "--limits"]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=self.a.timeout).stdout
        m = re.search(r"^max_size ([0-9]+)$", out, re.M)
        if not m:
            raise ToolError(f"{' '.join(cmd)}: no limit in:\n{out[-1500:]}")
        return int(m.group(1))

    def rstream_out(self, size, iters, mode):
        """rstream's output: "lat" runs `iters` ping-pongs of one transfer (-I), "bw" `iters`
        transfers one way, then back (-C)."""
        count = ["-I", str(iters), "-C", "1"] if mode == "lat" else ["-C", str(iters)]
        common = ["-S", str(size), *count, "-p", str(self.next_port())]
        return run_pair(["rstream", "-b", self.a.address, *common], ["rstream", "-s", self.a.address, *common],
                        self.a.timeout)

    def rstream(self, size, iters):
        """Context: rstream's ping-pong, half round trip in us."""
        return rstream_figures(self.rstream_out(size, iters, "lat"), size)[0]

    def sockperf_out(self, size, proto, seconds=2):
        """sockperf ping-pong over the kernel's TCP or UDP on --address, for `seconds`."""
        port = str(self.next_port())
        flag = ["--tcp"] if proto == "TCP" else []
        server = PIN_SERVER + ["sockperf", "server", *flag, "-i", self.a.address, "-p", port]
        srv = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            await_server(srv, int(port), min(self.a.timeout, 30), udp=proto != "TCP")
            return subprocess.run(PIN_CLIENT + ["sockperf", "ping-pong", *flag, "-i", self.a.address, "-p", port,
                                                "-m", str(max(size, 14)), "-t", str(seconds)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=self.a.timeout).stdout
        finally:
            srv.kill()
            srv.wait()

    def sockperf(self, size):
        """Context: kernel TCP ping-pong, median half round trip in us."""
        return sockperf_median(self.sockperf_out(size, "TCP"))


def rstream_figures(out, size):
    """rstream's row for `size`: (usec/xfer, Gb/sec)."""
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and rstream_count(f[1]) == size:
            return float(f[7]), float(f[6])
    raise ToolError(f"no rstream result in:\n{out[-1500:]}")


def sockperf_median(out):
    """sockperf's median half round trip (it reports RTT / 2) in us."""
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", out)
    if not m:
        raise ToolError(f"no sockperf median in:\n{out[-1500:]}")
    return float(m.group(1))


def rstream_count(text):
    """rstream prints sizes and counts as 64, 1k, 4m (powers of 1024)."""
    m = re.fullmatch(r"([0-9]+)([kmg]?)", text)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2)]


# Small messages: ep_lat over UD runs beside raw UD, and ib_write_lat bounds the ring channel, up to
# the size uam's and the stream's latency rows use (ring messages of unet_perf's default slots).
SMALL_MAX = ULP_LAT_SIZE
# Raw UD at the path MTU as fast as perftest sends it: a post list of 16 WRs per doorbell (as
# EP_BW_BATCH) and a run long enough to leave its start behind (about 1 s on rxe at 1 KiB).
RAW_UD_BW_FLAGS = "-l 16 -n 20000"
# Bounds: (name, row A, row B, what a unet / B target is measured against). Per round, A's peer
# figure over B's, both from the same round; the median says where the raw operation that carries
# unet's case stands against B's peer, so a target beyond it cannot be met on this device.
BOUNDS = [
    ("ib_write_lat / ib_send_lat, {s} B", "ep_lat {s} B vs WRITE", "ep_lat {s} B",
     "ring ep_lat / ib_send_lat: a ring message is one WRITE of more bytes"),
    ("ib_send_lat / ucx_perftest am_lat, {s} B", "am_lat RC {s} B vs raw SEND", "am_lat RC {s} B",
     "am_lat RC --noring / UCX: one SEND each way, as UCX's rc_verbs"),
    ("ib_write_lat / ucx_perftest am_lat, {s} B", "ep_lat {s} B vs WRITE", "am_lat RC {s} B",
     "am_lat RC / UCX on a ring channel: one WRITE each way, of more bytes"),
    ("raw UD at the path MTU / rstream, 64 KiB", f"stream_bw {ULP_BW_SIZE} B vs raw UD {{mtu}} B",
     f"stream_bw {ULP_BW_SIZE} B", "UD stream_bw / rstream: the UD stream is UD SENDs of at most one path MTU"),
]

# ep_bw pushes this many descriptors per poll(): one doorbell for all (perftest posts one WR per
# doorbell unless given -l), the paper's small-message argument.
EP_BW_BATCH = 16


def peer_size(tool, size):
    """The size a peer runs at: its tool's own -s ("ib_send_bw -c UD -s 4096"), else the case's."""
    f = tool.split()
    return int(f[f.index("-s") + 1]) if "-s" in f else size


def bw_metric(size):
    return "MsgRate Mpps" if size <= 1024 else "BW average MB/s"


def cases(a, limits):
    """(name, kind, size, unet test, unet extra flags, peer tool, metric, transport), for the tests
    in --tests. `limits` maps a transport to uam's largest payload there (am sizes are clipped to
    it, and a clipped size that repeats one already there is dropped)."""
    out = []
    # RC channels are ring channels by default (unet_perf --ring): small messages by RDMA WRITE into
    # the peer's ring. Their bound on the device is a raw WRITE ping-pong that polls memory
    # (ib_write_lat) at the same size; --noring rows are the SEND/RECV channels beside them.
    for s in a.lat_sizes:
        out.append((f"ep_lat {s} B", LAT, s, "ep_lat", (), "ib_send_lat", "t_typical us", "RC"))
        out.append((f"ep_lat {s} B vs WRITE", LAT, s, "ep_lat", (), "ib_write_lat", "t_typical us", "RC"))
        out.append((f"ep_lat {s} B --noring", LAT, s, "ep_lat", ("--noring",), "ib_send_lat", "t_typical us", "RC"))
    # The endpoint over UD beside raw UD at the small sizes: what core's UD path adds by itself, the
    # floor under uam's and the stream's UD rows against raw UD.
    for s in (x for x in a.lat_sizes if x <= SMALL_MAX):
        out.append((f"ep_lat {s} B UD vs raw UD", LAT, s, "ep_lat", ("-c", "UD"), "ib_send_lat -c UD",
                    "t_typical us", "UD"))
    for s in a.lat_sizes:
        out.append((f"da_write_lat {s} B", LAT, s, "da_write_lat", (), "ib_write_lat", "t_typical us", "RC"))
        out.append((f"da_read_lat {s} B", LAT, s, "da_read_lat", (), "ib_read_lat", "t_typical us", "RC"))
    batch = ("--batch", str(EP_BW_BATCH))
    for s in a.bw_sizes:
        out.append((f"ep_bw {s} B --batch {EP_BW_BATCH}", BW, s, "ep_bw", batch, "ib_send_bw", bw_metric(s), "RC"))
        out.append((f"ep_bw {s} B --batch {EP_BW_BATCH} --noring", BW, s, "ep_bw", batch + ("--noring",),
                    "ib_send_bw", bw_metric(s), "RC"))
    big = max(a.bw_sizes)
    out.append((f"da_write_bw {big} B", BW, big, "da_write_bw", (), "ib_write_bw", "BW average MB/s", "RC"))
    # Active messages, unet RC and UD each against ucx_perftest over rc_verbs: am_lat at 8 B and
    # the ep_lat sizes from 8 up (ucx_perftest's -s counts its 8-byte header), am_bw at the bw sizes
    # (64 KiB becomes the largest payload), batched as ep_bw.
    window = ("--window", str(a.am_window))
    for transport in ("RC", "UD") if "am_lat" in a.tests or "am_bw" in a.tests else ():
        c = ("-c", transport)
        for s in sorted({min(max(s, 8), limits[transport]) for s in [8, *a.lat_sizes]}):
            out.append((f"am_lat {transport} {s} B", LAT, s, "am_lat", c, "ucx_perftest am_lat", "t_typical us",
                        transport))
            if transport == "UD":  # UCX's own UD transport beside its RC one
                out.append((f"am_lat UD {s} B vs UCX UD", LAT, s, "am_lat", c, "ucx_perftest am_lat ud_verbs",
                            "t_typical us", "UD"))
            if transport == "RC" and s == 8:  # the raw SEND ping-pong, and uam on SEND/RECV channels
                out.append((f"am_lat RC {s} B vs raw SEND", LAT, s, "am_lat", c, "ib_send_lat", "t_typical us",
                            "RC"))
                out.append((f"am_lat RC {s} B --noring", LAT, s, "am_lat", c + ("--noring",),
                            "ucx_perftest am_lat", "t_typical us", "RC"))
        for s in sorted({min(s, limits[transport]) for s in a.bw_sizes}):
            out.append((f"am_bw {transport} {s} B --batch {EP_BW_BATCH}", BW, s, "am_bw", c + batch + window,
                        "ucx_perftest am_bw", bw_metric(s), transport))
            if transport == "UD":
                out.append((f"am_bw UD {s} B --batch {EP_BW_BATCH} vs UCX UD", BW, s, "am_bw", c + batch + window,
                            "ucx_perftest am_bw ud_verbs", bw_metric(s), "UD"))
    # uam's coalescing (on by default) off, at the smallest am_bw size: one packet per message,
    # what the per-message path costs without it.
    for transport in ("RC", "UD") if "am_bw" in a.tests else ():
        s = min(min(a.bw_sizes), limits[transport])
        out.append((f"am_bw {transport} {s} B --batch {EP_BW_BATCH} --nocoalesce", BW, s, "am_bw",
                    ("-c", transport) + batch + window + ("--nocoalesce",), "ucx_perftest am_bw", bw_metric(s),
                    transport))
    # uam over UD beside perftest over UD at the smallest sizes: what the device's UD path costs
    # by itself (on rxe a UD send costs far more than an RC one), apart from uam's own work.
    if "am_lat" in a.tests:
        s = min(8, limits.get("UD", 8))
        out.append((f"am_lat UD {s} B vs raw UD", LAT, s, "am_lat", ("-c", "UD"), "ib_send_lat -c UD",
                    "t_typical us", "UD"))
    if "am_bw" in a.tests:
        s = min(min(a.bw_sizes), limits.get("UD", 64))
        out.append((f"am_bw UD {s} B --batch {EP_BW_BATCH} vs raw UD", BW, s, "am_bw",
                    ("-c", "UD", "--batch", str(EP_BW_BATCH), "--window", str(a.am_window)), "ib_send_bw -c UD",
                    bw_metric(s), "UD"))
    # User-level protocols: the stream against rsockets and kernel TCP, datagrams against kernel
    # UDP, all over the device's netdev (rsockets on the device itself). The stream runs over UD,
    # as the paper's U-Net TCP did, and over RC (-c RC), the transport rsockets itself runs on (on
    # rxe a UD send costs far more than an RC one: ulp/README.md).
    if "stream_lat" in a.tests:
        for transport in ("UD", "RC"):
            tag = "" if transport == "UD" else " RC"
            for peer in ("rstream lat", "sockperf TCP"):
                out.append((f"stream_lat {ULP_LAT_SIZE} B{tag} vs {peer.split()[0]}", LAT, ULP_LAT_SIZE,
                            "stream_lat", ("-c", transport), peer, "t_typical us", transport))
            if transport == "UD":  # the device's own UD ping-pong at the same size: the bound
                out.append((f"stream_lat {ULP_LAT_SIZE} B vs raw UD", LAT, ULP_LAT_SIZE, "stream_lat",
                            ("-c", "UD"), "ib_send_lat -c UD", "t_typical us", "UD"))
            if transport == "RC":
                out.append((f"stream_lat {ULP_LAT_SIZE} B RC --noring vs rstream", LAT, ULP_LAT_SIZE, "stream_lat",
                            ("-c", "RC", "--noring"), "rstream lat", "t_typical us", "RC"))
    if "stream_bw" in a.tests:
        for transport in ("UD", "RC"):
            tag = "" if transport == "UD" else " RC"
            c = ("-c", transport)
            out.append((f"stream_bw {ULP_BW_SIZE} B{tag}", BW, ULP_BW_SIZE, "stream_bw", c, "rstream bw",
                        "BW average MB/s", transport))
            # The same with zero-copy sends from the client's memory (a direct-access endpoint).
            out.append((f"stream_bw {ULP_BW_SIZE} B{tag} zero-copy", BW, ULP_BW_SIZE, "stream_bw",
                        c + ("--mode", "direct"), "rstream bw", "BW average MB/s", transport))
            if transport == "UD" and "UD_MTU" in limits:  # the bound: raw UD SENDs of one path MTU
                mtu = limits["UD_MTU"]
                out.append((f"stream_bw {ULP_BW_SIZE} B vs raw UD {mtu} B", BW, ULP_BW_SIZE, "stream_bw", c,
                            f"ib_send_bw -c UD -s {mtu} {RAW_UD_BW_FLAGS}", "BW average MB/s", "UD"))
    if "dgram_lat" in a.tests:
        out.append((f"dgram_lat {ULP_LAT_SIZE} B", LAT, ULP_LAT_SIZE, "dgram_lat", (), "sockperf UDP", "t_typical us",
                    "UD"))
    return [x for x in out if x[3] in a.tests]


def measure(run, kind, size, tool=""):
    """Runs a tool and parses its figures; again (up to three runs) when it printed no usable
    figure (under TCG perftest now and then prints "inf" or a zero rate) or failed outright (now
    and then a perftest server hangs on a loaded host and the pair times out). A third failure
    ends the run."""
    for attempt in (1, 2, 3):
        out = ""
        try:
            out = run()
            f = figures(kind, size, out, tool)
            if f["value"] > 0 and f["value"] != float("inf"):
                return f
            why = f"a figure of {f['value']}"
        except (ToolError, ValueError) as e:
            why = str(e)
        if attempt == 3:
            raise ToolError(f"no usable figure three times ({why}):\n{out[-1500:]}")
        print(f"compare: no usable figure ({why.splitlines()[0]}), running it again", flush=True)


def figures(kind, size, out, tool=""):
    """The run's figures: latency, or bandwidth and message rate; `value` is the one compared.
    unet_perf and perftest print perftest's tables; ucx_perftest its Final row, of which the
    50%ile (half round trip, as t_typical) and the overall bandwidth and rate (the whole run, as
    unet's BW average from first post to last completion)."""
    if tool.startswith("sockperf"):
        lat = sockperf_median(out)
        return {"value": lat, "latency_us": lat}
    if tool.startswith("rstream"):
        usec, gbps = rstream_figures(out, size)
        if kind == LAT:
            return {"value": usec, "latency_us": usec}
        bw = gbps * 1e9 / 8 / (1 << 20)
        rate = bw * (1 << 20) / size / 1e6
    elif tool.startswith("ucx_perftest"):
        f = ucx_final(out)
        if kind == LAT:
            return {"value": f[1], "latency_us": f[1]}
        bw, rate = f[5], f[7] / 1e6
    elif kind == LAT:
        lat = perftest_latency(out, peer_size(tool, size))
        return {"value": lat, "latency_us": lat}
    else:
        bw, rate = perftest_bw(out, peer_size(tool, size))
    return {"value": rate if size <= 1024 else bw, "bw_MBps": bw, "msg_rate_Mpps": rate}


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    am = "am_lat" in a.tests or "am_bw" in a.tests
    limits = {t: r.limit("am_lat", t) for t in ("RC", "UD")} if am else {}
    if "stream_bw" in a.tests:
        limits["UD_MTU"] = r.limit("ep_lat", "UD")  # the largest UD message: the path MTU
    plan = cases(a, limits)
    results = {c[0]: {"kind": c[1], "size": c[2], "unet_test": c[3], "peer": c[5], "metric": c[6],
                      "transport": c[7], "unet": [], "peer_values": [], "unet_runs": [], "peer_runs": []}
               for c in plan}
    context = {}
    print(f"compare: device {a.device}, GID {a.gid}, {a.rounds} rounds, latency {a.lat_iters} / "
          f"bandwidth {a.bw_iters} iterations; tests {','.join(a.tests)}"
          + (f"; uam payload limit RC {limits['RC']} B, UD {limits['UD']} B" if am else ""), flush=True)
    for rnd in range(a.rounds):
        # A run that several cases share runs once per round: a peer's (the same tool, size and
        # iterations: ucx_perftest beside unet's RC and UD, rstream beside the four stream_bw
        # cases) and unet's (the same test, size, iterations and flags: ep_lat beside ib_send_lat
        # and ib_write_lat).
        peer_runs, unet_runs = {}, {}
        for name, kind, size, test, unet_flags, tool, _, _ in plan:
            iters = a.lat_iters if kind == LAT else a.bw_iters
            first_unet = rnd % 2 == 1  # alternate who goes first
            order = ["unet", "peer"] if first_unet else ["peer", "unet"]
            key, unet_key = (tool, kind, size, iters), (test, kind, size, iters, unet_flags)
            got = {}
            if key in peer_runs:
                got["peer"] = peer_runs[key]
            if unet_key in unet_runs:
                got["unet"] = unet_runs[unet_key]
            shared = " (shared: " + ", ".join(sorted(got)) + ")" if got else ""
            for who in (w for w in order if w not in got):
                got[who] = measure(lambda: r.unet(test, size, iters, unet_flags) if who == "unet"
                                   else r.peer(tool, kind, size, iters), kind, size,
                                   "" if who == "unet" else tool)
            peer_runs[key], unet_runs[unet_key] = got["peer"], got["unet"]
            x = results[name]
            x["unet"].append(got["unet"]["value"])
            x["peer_values"].append(got["peer"]["value"])
            x["unet_runs"].append(got["unet"])
            x["peer_runs"].append(got["peer"])
            print(f"round {rnd + 1}: {name:<30} unet {x['unet'][-1]:<10g} {tool} {x['peer_values'][-1]:<10g} "
                  f"ratio {x['unet'][-1] / x['peer_values'][-1]:.3f}{shared}", flush=True)
        if not a.no_context:
            run_context(a, r, context)
    summary = summarize(results)
    write_outputs(a, results, summary, context, bounds(results, a.lat_sizes, limits))
    return 0


def run_context(a, r, context):
    """Peers without a unet twin: one sample each per round, for the table and the plots."""
    def add(key, value):
        context.setdefault(key, []).append(value)
    if a.address:
        for s in a.lat_sizes:
            add(f"rstream {s} B", r.rstream(s, a.lat_iters))
        for s in a.lat_sizes:
            add(f"sockperf TCP {s} B", r.sockperf(s))
    if context:
        print("context: " + "  ".join(f"{k} {v[-1]:g}" for k, v in context.items()), flush=True)


def summarize(results):
    rows = []
    for name, x in results.items():
        ratios = [u / p for u, p in zip(x["unet"], x["peer_values"])]
        better_low = x["kind"] == LAT
        # Best run of each: under emulation a run lands in a fast or a slow mode whatever the tool
        # (bench/README.md); the best of N estimates the fast mode.
        best = min if better_low else max
        rows.append({"case": name, "metric": x["metric"], "unet_median": statistics.median(x["unet"]),
                     "peer": x["peer"], "peer_median": statistics.median(x["peer_values"]),
                     "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                     "ratio_max": max(ratios), "ratio_best": best(x["unet"]) / best(x["peer_values"]),
                     "lower_is_better": better_low, **interval_of(ratios)})
    return rows


def interval_of(ratios):
    """The 95% interval of the median ratio (median_interval.py) as a row's ratio_lo, ratio_hi;
    None for both below 6 rounds."""
    iv = median_interval.median_interval(ratios)
    return {"ratio_lo": iv[0] if iv else None, "ratio_hi": iv[1] if iv else None}


def interval_text(row):
    return median_interval.interval_text(row.get("ratio_lo"), row.get("ratio_hi"))


def bounds(results, lat_sizes, limits):
    """BOUNDS whose two rows ran: the median and spread of the per-round ratios of their peers."""
    out = []
    for name, row_a, row_b, about in BOUNDS:
        for s in [x for x in lat_sizes if x <= SMALL_MAX] if "{s}" in name else [None]:
            names = [t.format(s=s, mtu=limits.get("UD_MTU")) for t in (name, row_a, row_b)]
            if names[1] not in results or names[2] not in results:
                continue
            ratios = [x / y for x, y in zip(results[names[1]]["peer_values"], results[names[2]]["peer_values"])]
            out.append({"bound": names[0], "a": results[names[1]]["peer"], "b": results[names[2]]["peer"],
                        "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                        "ratio_max": max(ratios), "about": about, **interval_of(ratios)})
    return out


def write_outputs(a, results, summary, context, bound_rows=()):
    config = {k: v for k, v in vars(a).items() if k not in ("out",)}
    path = getattr(a, "targets", "")
    judged = targets.verdicts(targets.load(path), summary, bound_rows) if path else []
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"config": config, "pairs": results, "summary": summary, "context": context,
                   "bounds": list(bound_rows), "targets": judged}, f, indent=2)
    lines = [f"# unet vs peers — {a.device}, {a.rounds} rounds, medians", "",
             "| case | metric | unet | peer | peer value | unet / peer (median) | 95% interval | spread "
             "| best / best |",
             "|---|---|---:|---|---:|---:|---|---|---:|"]
    for s in summary:
        lines.append(f"| {s['case']} | {s['metric']} | {s['unet_median']:g} | {s['peer']} | {s['peer_median']:g} "
                     f"| **{s['ratio_median']:.3f}** | {interval_text(s)} "
                     f"| {s['ratio_min']:.3f}..{s['ratio_max']:.3f} | {s['ratio_best']:.3f} |")
    if bound_rows:
        lines += ["", "| bound (peer / peer, same round) | median | 95% interval | spread | what it bounds |",
                  "|---|---:|---|---|---|"]
        lines += [f"| {b['bound']} | **{b['ratio_median']:.3f}** | {interval_text(b)} "
                  f"| {b['ratio_min']:.3f}..{b['ratio_max']:.3f} | {b['about']} |" for b in bound_rows]
    lines += targets.markdown(judged)
    if context:
        lines += ["", "| context peer | median |", "|---|---:|"]
        lines += [f"| {k} | {statistics.median(v):g} |" for k, v in context.items()]
    lines += ["", "Latency: half round trip in microseconds (lower is better; da_read_lat and ib_read_lat: one "
              "READ round trip). Rates: higher is better. Ratio = unet / peer per round; median and min..max. "
              "95% interval: the rounds' order statistics that hold the true median with at least 95% "
              "probability (the sign test's interval; none below 6 rounds): a target inside it is "
              "not resolved by the run. Targets: the issues' (targets.json), each judged by its median, "
              "resolved when the interval lies wholly on one side of it, and beside the device's bound "
              "where one caps the case. "
              "best / best = unet's best run over the peer's best run (under emulation runs fall into a fast "
              "and a slow mode whatever the tool; the best of N estimates the fast one)."]
    md = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    print(md)
    files = [] if a.no_plots else plots.write(a.out)
    print(f"compare: wrote {a.out}/results.json, results.md{''.join(', ' + f for f in files)}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ToolError as e:
        print(f"compare: {e}", file=sys.stderr)
        sys.exit(1)
