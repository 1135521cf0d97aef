#!/usr/bin/env bash
# bench/rxe_counters.sh BUILD_DIR — where a small-message stream's time goes on rxe: the message
# rate of ib_send_bw (plain and with a 16-WR post list) and of unet_perf ep_bw (one doorbell per
# message and per 16), each with the device's packet counters before and after
# (/sys/class/infiniband/DEV/ports/1/hw_counters). Run where an rxe device exists, e.g.
# `ci/rxe-vm -- bench/rxe_counters.sh build-release`. Server and client are pinned to two CPUs.
set -euo pipefail
build=${1:?usage: bench/rxe_counters.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
size=${UNET_BENCH_SIZE:-64}
iters=${UNET_BENCH_ITERS:-20000}
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
port=${UNET_BENCH_PORT:-19300}
count() { cat "$counters/$1" 2>/dev/null || echo 0; }
run() {
  port=$((port + 1))
  local sent0 rcvd0 rnr0 retry0 rate
  sent0=$(count sent_pkts) rcvd0=$(count rcvd_pkts) rnr0=$(count rcvd_rnr_err) retry0=$(count completer_retry_err)
  timeout 300 taskset -c 0 "$@" -p "$port" >/dev/null 2>&1 &
  sleep 1.5
  rate=$(timeout 300 taskset -c 1 "$@" -p "$port" 127.0.0.1 2>&1 | awk -v s="$size" '$1 == s && NF >= 5 { print $NF }')
  wait
  awk -v r="${rate:-?}" -v n="$iters" -v s=$(($(count sent_pkts) - sent0)) -v c=$(($(count rcvd_pkts) - rcvd0)) \
      -v rnr=$(($(count rcvd_rnr_err) - rnr0)) -v rt=$(($(count completer_retry_err) - retry0)) -v what="$*" 'BEGIN {
    printf "%-70s %8s Mpps  sent_pkts/msg %.2f  rcvd_pkts/msg %.2f  rnr %d  retries %d\n", what, r, s / n, c / n, rnr, rt }'
}
run ib_send_bw -d "$dev" -s "$size" -n "$iters" -F
run ib_send_bw -d "$dev" -s "$size" -n "$iters" -F -l 16
run "$build/bench/unet_perf" --test ep_bw -d "$dev" -s "$size" -n "$iters"
run "$build/bench/unet_perf" --test ep_bw -d "$dev" -s "$size" -n "$iters" --batch 16
