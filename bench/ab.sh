#!/usr/bin/env bash
# bench/ab.sh ROUNDS OLD NEW ARGS... — two unet_perf builds timed in turn: each round runs OLD's and NEW's
# server and client (ARGS, e.g. `--test stream_lat -c RC -s 64`; the order alternates between rounds) and
# prints both t_typical and NEW / OLD; at the end the median of the per-round ratios, its 95% interval
# (bench/compare/median_interval.py; from 6 rounds) and how many were below 1. Under TCG one round
# proves nothing (bench/README.md). On a device, e.g. `ci/rxe-vm -- bench/ab.sh 30
# old/bench/unet_perf build-release/bench/unet_perf --test am_lat -c RC -s 8`. A bandwidth test:
# UNET_AB_FIELD=BW_average (the result's field compared; default t_typical).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: bench/ab.sh ROUNDS OLD NEW ARGS..." >&2; exit 2; }
rounds=$1 old=$2 new=$3
shift 3
args=("$@")
devs=(/sys/class/infiniband/*)
dev=${UNET_DEVICE:-${devs[0]##*/}}
port=${UNET_AB_PORT:-18561}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

field=${UNET_AB_FIELD:-t_typical}
# Server and client on CPUs of their own, as bench/compare pins them: two spinning processes on one
# vCPU make a round many times slower.
pin_server=() pin_client=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_client=(taskset -c 1)
fi

once() {  # once BIN: the client's $field of one run beside its own server
  local bin=$1 server
  timeout 600 "${pin_server[@]}" "$bin" -d "$dev" -p "$port" "${args[@]}" >"$scratch/server.log" 2>&1 &
  server=$!
  if ! timeout 600 "${pin_client[@]}" "$bin" -d "$dev" -p "$port" "${args[@]}" --json "$scratch/client.json" 127.0.0.1 \
    >"$scratch/client.log" 2>&1; then
    echo "ab: $bin failed:" >&2
    tail -n 5 "$scratch/client.log" "$scratch/server.log" >&2
    kill "$server" 2>/dev/null || true
    exit 1
  fi
  wait "$server" || { echo "ab: $bin's server failed:" >&2; tail -n 5 "$scratch/server.log" >&2; exit 1; }
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0][sys.argv[2]])' \
    "$scratch/client.json" "$field"
}

ratios=()
for ((i = 0; i < rounds; i++)); do
  if ((i % 2)); then n=$(once "$new"); o=$(once "$old"); else o=$(once "$old"); n=$(once "$new"); fi
  r=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) / float(sys.argv[1]):.4f}")' "$o" "$n")
  printf 'round %d: old %.2f, new %.2f (%s), new / old %s\n' "$i" "$o" "$n" "$field" "$r"
  ratios+=("$r")
done
PYTHONPATH="$(dirname "$0")/compare" python3 -c 'import statistics, sys
from median_interval import median_interval
v = [float(x) for x in sys.argv[1:]]
iv = median_interval(v)
ci = f", 95% interval {iv[0]:.3f}..{iv[1]:.3f}" if iv else ""
print(f"new / old: median {statistics.median(v):.3f} over {len(v)} rounds{ci} ({min(v):.3f}..{max(v):.3f}), {sum(x < 1 for x in v)} below 1")' "${ratios[@]}"
