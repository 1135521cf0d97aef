#!/usr/bin/env bash
# bench/am_instructions.sh BUILD_DIR — instructions one am_lat round trip costs the client over RC
# (`unet_perf --test am_lat -c RC -s 8`: a request out, its reply handler, its completion), and how
# much of it is uam's own. Runs where an RDMA device exists (e.g.
# `ci/rxe-vm --timeout 1200 -- bench/am_instructions.sh build`). The client runs under callgrind,
# the server plain, at two iteration counts; the difference, divided by the difference in
# iterations, cancels set-up. Printed per round trip:
#   total         the whole client process (benchmark loop included)
#   uam calls     inclusive cost of uam::Endpoint::poll() and request() (collected only inside them,
#                 --toggle-collect), split by where the instructions are:
#     uam         functions in namespace unet::uam (endpoint, codec, credit window, reliability)
#     core        functions in namespace unet::core (upcall, send path, repost)
#     verbs       libibverbs, the provider (librxe) and its spinlock and doorbell write()
#     other       the rest: the benchmark's handlers, std::function, memcpy, libc
# Like bench/instructions_per_round_trip.sh the counts include the polls spent waiting for the
# reply (an idle poll of uam + core + provider), so they move a little between runs.
set -euo pipefail
build=${1:?usage: bench/am_instructions.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
tool=$build/bench/unet_perf
port=${UNET_AM_PORT:-18533}
out=$(mktemp -d -p "$build")
trap 'rm -rf "$out"' EXIT
run() {  # run N CALLGRIND_ARGS...: the client of N iterations under callgrind, into $out/cg
  local n=$1
  shift
  "$tool" --test am_lat -c RC -d "$dev" -p "$port" -s 8 -n "$n" --warmup 10 --timeout_ms 120000 >/dev/null 2>&1 &
  local server=$!
  sleep 2
  timeout 900 valgrind --tool=callgrind "$@" --callgrind-out-file="$out/cg" "$tool" --test am_lat -c RC \
    -d "$dev" -p "$port" -s 8 -n "$n" --warmup 10 --timeout_ms 120000 127.0.0.1 >/dev/null 2>"$out/log"
  wait "$server"
}
split() {  # self costs of $out/cg by place: "total uam core verbs other"
  callgrind_annotate --auto=no --threshold=100 "$out/cg" |
    awk '$1 ~ /^[0-9,]+$/ && $2 ~ /^\(/ && $0 !~ /PROGRAM TOTALS/ {
           gsub(",", "", $1); t += $1
           if ($0 ~ /libibverbs|librxe|pthread_spin|write\.c/) v += $1
           else if ($0 ~ /:unet::uam::/) u += $1
           else if ($0 ~ /:unet::core::/) c += $1
           else o += $1 }
         END { printf "%d %d %d %d %d\n", t, u + 0, c + 0, v + 0, o + 0 }'
}
measure() {  # measure N: "total | in-uam-calls uam core verbs other" for a client of N iterations
  run "$1"
  local total
  total=$(sed -nE 's/.*Collected : ([0-9]+).*/\1/p' "$out/log")
  run "$1" '--toggle-collect=unet::uam::Endpoint::poll()' '--toggle-collect=unet::uam::Endpoint::request*'
  echo "$total $(split)"
}
read -ra a <<<"$(measure 500)"
read -ra b <<<"$(measure 1500)"
per() { echo $(((b[$1] - a[$1]) / 1000)); }
echo "am_lat RC 8 B, client, instructions per round trip:"
echo "  total (whole process):              $(per 0)"
echo "  inside uam poll()+request():        $(per 1)"
echo "    uam's own:                        $(per 2)"
echo "    core's own:                       $(per 3)"
echo "    verbs calls (libibverbs, librxe): $(per 4)"
echo "    other (handlers, std, libc):      $(per 5)"
echo "  uam + core, verbs excluded:         $(($(per 2) + $(per 3)))"
