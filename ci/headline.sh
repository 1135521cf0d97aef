#!/usr/bin/env bash
# ci/headline.sh BUILD_DIR — the headline benchmark, run where an RDMA device exists (a real NIC,
# host rxe, or inside ci/rxe-vm). Three RC SEND/RECV ping-pongs of the same size and iterations on
# one device, interleaved over several rounds:
#   ib_send_lat (perftest)  the tool users trust
#   verbs_pingpong          unet's verbs layer, in ib_send_lat's loop shape
#   verbs_pingpong --raw    the same loop calling libibverbs directly (what the wrapper costs)
#   unet_pingpong           a U-Net endpoint (core/): descriptors, queues, SRQ free queue, channels
#   ib_send_lat --use-srq   perftest receiving through a shared receive queue, as the endpoint does
# unet gets the inline size perftest reports using. Prints the median of the rounds' t_typical
# (median latency) for each and the ratios. Server and client are pinned to different CPUs when
# there are two or more. Environment: UNET_DEVICE (first device), UNET_BENCH_SIZE (8),
# UNET_BENCH_ITERS (5000), UNET_BENCH_ROUNDS (5), UNET_BENCH_PORT (18515).
set -euo pipefail
build=${1:?usage: ci/headline.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
size=${UNET_BENCH_SIZE:-8}
iters=${UNET_BENCH_ITERS:-5000}
rounds=${UNET_BENCH_ROUNDS:-5}
port=${UNET_BENCH_PORT:-18515}
ulimit -l unlimited 2>/dev/null || true
pin_server=() pin_client=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_client=(taskset -c 1)
fi

# Runs one tool's server and client on this host; prints the client's output. Both are bounded.
pair() {
  local out rc=0 server_rc=0
  timeout 300 "${pin_server[@]}" "$@" >/dev/null 2>&1 &
  local server=$!
  sleep 2  # ib_send_lat is not always listening after 1 s under TCG
  out=$(timeout 300 "${pin_client[@]}" "$@" 127.0.0.1 2>&1) || rc=$?
  wait "$server" || server_rc=$?
  [ "$rc" -ne 0 ] || rc=$server_rc
  echo "$out"
  return "$rc"
}

# One ib_send_lat pair with the given extra flags; under TCG it sometimes prints "inf" as its
# median, and then runs once more.
perftest() {
  local out
  out=$(pair ib_send_lat -d "$dev" -s "$size" -n "$iters" -p "$port" -F "$@") || { echo "$out"; return 1; }
  if ! [[ "$(typical <<<"$out")" =~ ^[0-9.]+$ ]]; then
    out=$(pair ib_send_lat -d "$dev" -s "$size" -n "$iters" -p "$port" -F "$@") || { echo "$out"; return 1; }
  fi
  echo "$out"
}

# t_typical from a perftest-format latency table: the 5th column of the row for $size.
typical() { awk -v s="$size" '$1 == s && NF >= 9 { print $5; exit }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "headline: device $dev, $size B RC SEND/RECV half round trip, $iters iterations x $rounds rounds"
perf=() unet=() raw=() endpoint=() srq=() inline=""
for r in $(seq 1 "$rounds"); do
  out=$(perftest) || { echo "$out"; exit 1; }
  [ "$r" -eq 1 ] && echo "$out"
  perf+=("$(typical <<<"$out")")
  [ -n "$inline" ] || inline=$(sed -nE 's/.*Max inline data *: *([0-9]+).*/\1/p' <<<"$out" | head -n1)
  for mode in unet raw; do
    flags=(-d "$dev" -s "$size" -n "$iters" -p "$port" -I "${inline:-0}")
    [ "$mode" = raw ] && flags+=(--raw)
    out=$(pair "$build/bench/verbs_pingpong" "${flags[@]}") || { echo "$out"; exit 1; }
    [ "$r" -eq 1 ] && echo "$out"
    if [ "$mode" = unet ]; then unet+=("$(typical <<<"$out")"); else raw+=("$(typical <<<"$out")"); fi
  done
  out=$(pair "$build/bench/unet_pingpong" -d "$dev" -s "$size" -n "$iters" -p "$port") || { echo "$out"; exit 1; }
  [ "$r" -eq 1 ] && echo "$out"
  endpoint+=("$(typical <<<"$out")")
  out=$(perftest --use-srq) || { echo "$out"; exit 1; }
  srq+=("$(typical <<<"$out")")
  for v in "${perf[-1]}" "${unet[-1]}" "${raw[-1]}" "${endpoint[-1]}" "${srq[-1]}"; do
    [[ "$v" =~ ^[0-9.]+$ ]] || { echo "headline: a tool printed no usable latency ('$v')"; exit 1; }
  done
  echo "round $r: t_typical  ib_send_lat ${perf[-1]}  raw ${raw[-1]}  verbs ${unet[-1]}  endpoint ${endpoint[-1]}  ib_send_lat --use-srq ${srq[-1]} (us)"
done
p=$(median "${perf[@]}") u=$(median "${unet[@]}") w=$(median "${raw[@]}") e=$(median "${endpoint[@]}") q=$(median "${srq[@]}")
awk -v p="$p" -v u="$u" -v w="$w" -v e="$e" -v q="$q" -v s="$size" -v i="${inline:-0}" 'BEGIN {
  printf "headline: %d B RC half round trip (perftest inline %d B), median of rounds:\n", s, i
  printf "headline:   ib_send_lat %.2f | raw verbs %.2f | unet verbs layer %.2f | U-Net endpoint %.2f | ib_send_lat --use-srq %.2f (us)\n", p, w, u, e, q
  printf "headline: verbs layer / raw verbs = %.3f   verbs layer / ib_send_lat = %.3f\n", u / w, u / p
  printf "headline: endpoint / ib_send_lat = %.3f   endpoint / ib_send_lat --use-srq = %.3f\n", e / p, e / q }'
