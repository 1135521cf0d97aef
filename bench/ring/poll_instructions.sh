#!/usr/bin/env bash
# bench/ring/poll_instructions.sh BUILD_DIR — instructions of one idle poll() of an endpoint with
# 0, 1, 16 and 64 ring channels (and 64 plain ones), the provider's poll_cq included: callgrind
# counts poll() inclusively over two poll counts, whose difference cancels set-up. Runs where an
# RDMA device exists (e.g. `ci/rxe-vm -- bench/ring/poll_instructions.sh build-release`).
set -euo pipefail
build=${1:?usage: bench/ring/poll_instructions.sh BUILD_DIR}
tool=$build/bench/unet_idle_poll
out=$(mktemp -d -p "$build")
trap 'rm -rf "$out"' EXIT
inclusive() {  # inclusive POLLS ARGS...: poll()'s inclusive instructions over POLLS idle polls
  local polls=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect='idle_polls*' \
    "$tool" --polls "$polls" "$@" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  callgrind_annotate --auto=no "$out/cg" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
per_poll() {  # per_poll LABEL ARGS...
  local label=$1 a b
  shift
  a=$(inclusive 1000 "$@")
  b=$(inclusive 11000 "$@")
  echo "$label: $(((b - a) / 10000)) instructions per idle poll()"
}
per_poll "0 channels" --channels 0
for n in 1 16 64; do per_poll "$n ring channels" --channels "$n"; done
per_poll "64 plain channels" --channels 64 --noring
