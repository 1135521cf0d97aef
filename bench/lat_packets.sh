#!/usr/bin/env bash
# bench/lat_packets.sh BUILD_DIR — packets per round trip of the UD ping-pongs on rxe: ib_send_lat -c UD
# beside unet_perf's ep_lat, am_lat (8 B) and stream_lat (64 B) over UD, each with the device's packet
# counters (/sys/class/infiniband/DEV/ports/1/hw_counters) before and after, both sides on one device
# (so 2.0 is one packet each way; unet's set-up and warm-up add a little). Run where an rxe device
# exists, e.g. `ci/rxe-vm -- bench/lat_packets.sh build-release`. Server and client are pinned.
set -euo pipefail
build=${1:?usage: bench/lat_packets.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
iters=${UNET_BENCH_ITERS:-3000}
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
port=${UNET_BENCH_PORT:-19400}
count() { cat "$counters/$1" 2>/dev/null || echo 0; }
run() {
  port=$((port + 1))
  local sent0 rcvd0 typical
  sent0=$(count sent_pkts) rcvd0=$(count rcvd_pkts)
  timeout 300 taskset -c 0 "$@" -p "$port" >/dev/null 2>&1 &
  sleep 1.5
  typical=$(timeout 300 taskset -c 1 "$@" -p "$port" 127.0.0.1 2>&1 | awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $5 }' | tail -n1)
  wait
  awk -v t="${typical:-?}" -v n="$iters" -v s=$(($(count sent_pkts) - sent0)) -v c=$(($(count rcvd_pkts) - rcvd0)) \
      -v what="$*" 'BEGIN { printf "%-72s t_typical %8s us  sent_pkts/iter %.3f  rcvd_pkts/iter %.3f\n", what, t, s / n, c / n }'
}
run ib_send_lat -d "$dev" -c UD -s 8 -n "$iters" -F
run "$build/bench/unet_perf" --test ep_lat -c UD -d "$dev" -s 8 -n "$iters"
run "$build/bench/unet_perf" --test am_lat -c UD -d "$dev" -s 8 -n "$iters"
run ib_send_lat -d "$dev" -c UD -s 64 -n "$iters" -F
run "$build/bench/unet_perf" --test stream_lat -c UD -d "$dev" -s 64 -n "$iters"
