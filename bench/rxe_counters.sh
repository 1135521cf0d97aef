#!/usr/bin/env bash
# bench/rxe_counters.sh [--lat] BUILD_DIR — packets on rxe, from the device's counters before and after
# each run (/sys/class/infiniband/DEV/ports/1/hw_counters). By default, where a small-message stream's
# time goes: the message rate of ib_send_bw (plain and with a 16-WR post list) and of unet_perf ep_bw (one
# doorbell per message and per 16). With --lat, packets per round trip of the ping-pongs: over UD,
# ib_send_lat -c UD beside unet_perf's ep_lat, am_lat (8 B) and stream_lat (64 B); over RC, ib_send_lat
# and ib_write_lat beside ep_lat (a ring channel) and am_lat (8 B). Both sides are on one device, so
# 2.0 is one packet each way (UD) and 4.0 adds RC's acknowledgements; unet's set-up and warm-up add a
# little. Run where an
# rxe device exists, e.g. `ci/rxe-vm -- bench/rxe_counters.sh build-release`. Server and client are
# pinned to two CPUs.
set -euo pipefail
lat=0
if [ "${1:-}" = --lat ]; then lat=1; shift; fi
build=${1:?usage: bench/rxe_counters.sh [--lat] BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
size=${UNET_BENCH_SIZE:-64}
if ((lat)); then iters=${UNET_BENCH_ITERS:-3000} unit=us per=iter; else iters=${UNET_BENCH_ITERS:-20000} unit=Mpps per=msg; fi
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
port=${UNET_BENCH_PORT:-19300}
count() { cat "$counters/$1" 2>/dev/null || echo 0; }
# The client's figure: t_typical (the fifth column of its last result line) with --lat, else the
# message rate (the last column of the line for $size).
figure() {
  if ((lat)); then awk '$1 ~ /^[0-9]+$/ && NF >= 5 { f = $5 } END { print f }'
  else awk -v s="$size" '$1 == s && NF >= 5 { print $NF }'; fi
}
run() {
  port=$((port + 1))
  local sent0 rcvd0 rnr0 retry0 fig
  sent0=$(count sent_pkts) rcvd0=$(count rcvd_pkts) rnr0=$(count rcvd_rnr_err) retry0=$(count completer_retry_err)
  timeout 300 taskset -c 0 "$@" -p "$port" >/dev/null 2>&1 &
  sleep 1.5
  fig=$(timeout 300 taskset -c 1 "$@" -p "$port" 127.0.0.1 2>&1 | figure)
  wait
  awk -v f="${fig:-?}" -v u="$unit" -v p="$per" -v n="$iters" -v s=$(($(count sent_pkts) - sent0)) \
      -v c=$(($(count rcvd_pkts) - rcvd0)) -v rnr=$(($(count rcvd_rnr_err) - rnr0)) \
      -v rt=$(($(count completer_retry_err) - retry0)) -v what="$*" 'BEGIN {
    printf "%-72s %8s %s  sent_pkts/%s %.3f  rcvd_pkts/%s %.3f  rnr %d  retries %d\n", what, f, u, p, s / n, p, c / n, rnr, rt }'
}
if ((lat)); then
  run ib_send_lat -d "$dev" -c UD -s 8 -n "$iters" -F
  run "$build/bench/unet_perf" --test ep_lat -c UD -d "$dev" -s 8 -n "$iters"
  run "$build/bench/unet_perf" --test am_lat -c UD -d "$dev" -s 8 -n "$iters"
  run ib_send_lat -d "$dev" -c UD -s 64 -n "$iters" -F
  run "$build/bench/unet_perf" --test stream_lat -c UD -d "$dev" -s 64 -n "$iters"
  run ib_send_lat -d "$dev" -s 8 -n "$iters" -F
  run ib_write_lat -d "$dev" -s 8 -n "$iters" -F
  run "$build/bench/unet_perf" --test ep_lat -d "$dev" -s 8 -n "$iters"
  run "$build/bench/unet_perf" --test am_lat -d "$dev" -s 8 -n "$iters"
  exit 0
fi
run ib_send_bw -d "$dev" -s "$size" -n "$iters" -F
run ib_send_bw -d "$dev" -s "$size" -n "$iters" -F -l 16
run "$build/bench/unet_perf" --test ep_bw -d "$dev" -s "$size" -n "$iters"
run "$build/bench/unet_perf" --test ep_bw -d "$dev" -s "$size" -n "$iters" --batch 16
