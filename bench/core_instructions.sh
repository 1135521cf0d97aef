#!/usr/bin/env bash
# bench/core_instructions.sh BUILD_DIR — instructions core itself spends per message of an 8 B RC
# ping-pong (unet_pingpong), the verbs calls excluded. Runs where an RDMA device exists (e.g.
# `ci/rxe-vm -- bench/core_instructions.sh build`).
#   compose  send_inline(): the descriptor composed in the send queue
#   poll     poll(), whose steps are inlined into it: post the send (build the WR, signaling, the
#            in-flight window), reap the arrival (tag lookup, descriptor, small-message copy,
#            buffer back to the free queue) and repost freed buffers, minus the provider's
#            post_send, poll_cq and post_recv
# callgrind collects only inside those functions (--toggle-collect); the instructions of
# libibverbs and the provider (librxe) are subtracted; two iteration counts cancel set-up. The
# polls counted include the idle ones (~100 instructions each with the provider's empty poll_cq),
# but under callgrind the client runs so slowly that the reply is nearly always there at its
# first poll. Not counted: the receive() that pops the descriptor (inline, in the caller).
set -euo pipefail
build=${1:?usage: bench/core_instructions.sh BUILD_DIR}
dev=${UNET_DEVICE:-$(ls /sys/class/infiniband | head -n1)}
tool=$build/bench/unet_pingpong
out=$(mktemp -d -p "$build")
trap 'rm -rf "$out"' EXIT
own() {  # own N FUNCTION...: core's instructions inside FUNCTIONs for a client of N iterations
  local n=$1 toggles=() f
  shift
  for f in "$@"; do toggles+=("--toggle-collect=$f"); done
  "$tool" -d "$dev" -s 8 -n "$n" --warmup 10 --timeout_ms 120000 >/dev/null 2>&1 &
  local server=$!
  sleep 2
  timeout 600 valgrind --tool=callgrind "${toggles[@]}" --callgrind-out-file="$out/cg" "$tool" -d "$dev" -s 8 \
    -n "$n" --warmup 10 --timeout_ms 120000 127.0.0.1 >/dev/null 2>"$out/log"
  wait "$server"
  # Per-function self costs; the provider's and libibverbs' own, and the provider's spinlock and doorbell write(), are
  # the verbs calls.
  callgrind_annotate --auto=no --threshold=100 "$out/cg" |
    awk '$1 ~ /^[0-9,]+$/ && $2 ~ /^\(/ && $0 !~ /PROGRAM TOTALS|libibverbs|librxe|pthread_spin|write\.c/ {
           gsub(",", "", $1); s += $1 } END { print s + 0 }'
}
per_message() {  # per_message NAME FUNCTION...
  local name=$1 a b
  shift
  a=$(own 500 "$@")
  b=$(own 1500 "$@")
  echo "core $name path: $(((b - a) / 1000)) instructions per message (verbs calls excluded)"
}
per_message compose 'unet::core::Endpoint::send_inline*'
per_message poll 'unet::core::Endpoint::poll()'
