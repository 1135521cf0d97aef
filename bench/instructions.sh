#!/usr/bin/env bash
# bench/instructions.sh TOOL ARGS... — instructions per iteration of any ping-pong or stream
# client, unet_perf's or a peer's, counted by callgrind; for comparing unet with the tool it is
# measured against, where time under TCG only shows a ratio. Examples (where an RDMA device exists,
# e.g. inside `ci/rxe-vm --timeout 1800 -- ...`):
#   bench/instructions.sh build-release/bench/unet_perf --test am_lat -c UD -s 8
#   bench/instructions.sh ib_send_lat -c UD -s 8
# The server is `TOOL ARGS -d DEV -n N` (ucx_perftest's: `ucx_perftest`), the client the same
# with 127.0.0.1, under callgrind, at two iteration counts; the difference, divided by the
# difference in iterations, cancels set-up and warm-up. Printed per iteration: the whole client,
# and the part in libibverbs and the provider (librxe, its spinlock and doorbell write()). The
# counts include the polls spent waiting (few: under callgrind the client is the slow side).
# UNET_INSTRUCTIONS_LOW / _HIGH: the two iteration counts (500, 1500).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/instructions.sh TOOL ARGS..." >&2; exit 2; }
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
port=${UNET_INSTRUCTIONS_PORT:-18541}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tool=$1
shift
args=("$@")
count() {  # count N: "total verbs" instructions of a client of N iterations
  local n=$1 server client
  case $(basename "$tool") in
    ucx_perftest)
      server=("$tool" -p "$port")
      client=("$tool" -p "$port" 127.0.0.1 -d "$dev:1" "${args[@]}" -n "$n") ;;
    unet_perf)
      server=("$tool" -d "$dev" -p "$port" -n "$n" --timeout_ms 300000 "${args[@]}")
      client=("${server[@]}" 127.0.0.1) ;;
    *)
      server=("$tool" -d "$dev" -p "$port" -n "$n" -F "${args[@]}")
      client=("${server[@]}" 127.0.0.1) ;;
  esac
  timeout 900 "${server[@]}" >"$out/server.log" 2>&1 &
  local pid=$!
  sleep 2
  timeout 900 valgrind --tool=callgrind --callgrind-out-file="$out/cg" "${client[@]}" >"$out/client.log" \
    2>"$out/log" || { tail -5 "$out/client.log" "$out/log" >&2; kill "$pid" 2>/dev/null; exit 1; }
  wait "$pid" || true
  callgrind_annotate --auto=no --threshold=100 "$out/cg" |
    awk '$1 ~ /^[0-9,]+$/ && $2 ~ /^\(/ && $0 !~ /PROGRAM TOTALS/ {
           gsub(",", "", $1); t += $1
           if ($0 ~ /libibverbs|librxe|pthread_spin|write\.c/) v += $1 }
         END { printf "%d %d\n", t, v + 0 }'
}
lo=${UNET_INSTRUCTIONS_LOW:-500} hi=${UNET_INSTRUCTIONS_HIGH:-1500}
read -ra a <<<"$(count "$lo")"
read -ra b <<<"$(count "$hi")"
echo "$(basename "$tool") ${args[*]}: $(((b[0] - a[0]) / (hi - lo))) instructions per iteration," \
  "$(((b[1] - a[1]) / (hi - lo))) of them in libibverbs and the provider"
