#!/usr/bin/env bash
# bench/instructions_per_round_trip.sh BUILD_DIR — instructions one client round trip costs, for
# each 8 B RC ping-pong: raw libibverbs, unet's verbs layer, and a U-Net endpoint. Runs where an
# RDMA device exists (e.g. `ci/rxe-vm -- bench/instructions_per_round_trip.sh build`). The client
# runs under callgrind at two iteration counts; the difference, divided by the difference in
# iterations, cancels set-up. Unlike times under TCG, these counts barely move between runs (they
# still include the polls spent waiting, which vary a little).
set -euo pipefail
build=${1:?usage: bench/instructions_per_round_trip.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
out=$(mktemp -d -p "$build")
trap 'rm -rf "$out"' EXIT
count() {  # count TOOL... N: instructions of the client running N iterations
  local n=${*: -1}
  local tool=("${@:1:$#-1}")
  "${tool[@]}" -d "$dev" -s 8 -n "$n" --warmup 10 --timeout_ms 120000 >/dev/null 2>&1 &
  local server=$!
  sleep 2
  timeout 600 valgrind --tool=callgrind --callgrind-out-file="$out/cg" "${tool[@]}" -d "$dev" -s 8 -n "$n" \
    --warmup 10 --timeout_ms 120000 127.0.0.1 >/dev/null 2>"$out/log"
  wait "$server"
  sed -nE 's/.*Collected : ([0-9]+).*/\1/p' "$out/log"
}
for t in "raw libibverbs:$build/bench/verbs_pingpong --raw" "unet verbs layer:$build/bench/verbs_pingpong" \
         "U-Net endpoint:$build/bench/unet_pingpong"; do
  read -ra tool <<<"${t#*:}"
  a=$(count "${tool[@]}" 500)
  b=$(count "${tool[@]}" 1500)
  echo "${t%%:*}: $(((b - a) / 1000)) instructions per round trip"
done
