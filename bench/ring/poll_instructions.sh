#!/usr/bin/env bash
# bench/ring/poll_instructions.sh BUILD_DIR — instructions of one idle poll() of an endpoint with 0, 1, 16 and
# 64 ring channels (and 64 plain ones), the provider's poll_cq included: unet_idle_poll under callgrind, inside
# idle_polls() only, at 1000 and 11000 polls. On a device, e.g.
# `ci/rxe-vm -- bench/ring/poll_instructions.sh build-release`.
set -euo pipefail
build=${1:?usage: bench/ring/poll_instructions.sh BUILD_DIR}
# shellcheck source=bench/callgrind.sh
. "$(dirname "$0")/../callgrind.sh"
per_poll() {  # per_poll LABEL ARGS...
  local label=$1 polls a b
  shift
  for polls in 1000 11000; do
    cg_run "$cg_dir/$polls" --toggle-collect='idle_polls*' -- \
      "$build/bench/unet_idle_poll" --polls "$polls" "$@"
  done
  a=$(cg_classes "$cg_dir/1000")
  b=$(cg_classes "$cg_dir/11000")
  echo "$label: $(cg_per "${a%% *}" "${b%% *}" 1000 11000) instructions per idle poll()"
}
per_poll "0 channels" --channels 0
for n in 1 16 64; do per_poll "$n ring channels" --channels "$n"; done
per_poll "64 plain channels" --channels 64 --noring
