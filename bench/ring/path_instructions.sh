#!/usr/bin/env bash
# bench/ring/path_instructions.sh BUILD_DIR — instructions per message of each phase of a small message
# through core (send + the poll that posts it, the poll that finds it, receive + release), ring channel and
# plain, 8 and 64 B, in brackets the provider's part (with libc's memcpy/memmove/memset): unet_message_path
# under callgrind, one phase at a time. On a device: `ci/rxe-vm -- bench/ring/path_instructions.sh build`.
set -euo pipefail
build=${1:?usage: bench/ring/path_instructions.sh BUILD_DIR}
# shellcheck source=bench/callgrind.sh
. "$(dirname "$0")/../callgrind.sh"
count=1000
messages=$((2 * count))
phase() {  # phase FUNCTION SIZE RING: appends "total (verbs)" instructions per message to $row
  cg_run "$cg_dir/cg" --toggle-collect="*$1*" -- "$build/bench/unet_message_path" -s "$2" --count "$count" "$3"
  grep -q ', 0 found late' "$cg_dir/cg.out" ||
    { echo "$1: some arrivals were late: $(cat "$cg_dir/cg.out")" >&2; exit 1; }
  local classes t v
  classes=$(cg_classes "$cg_dir/cg" 'memmove|memcpy|memset')
  read -r t v _ <<<"$classes"
  row+=$(printf ' %10d (%5d)' $((t / messages)) $((v / messages)))
}
printf '%-5s %-7s %18s %18s %18s\n' size channel "send+post (verbs)" "arrive (verbs)" "receive (verbs)"
for size in 8 64; do
  for ring in --ring --noring; do
    row=$(printf '%-5s %-7s' "$size" "${ring#--}")
    for f in send_path arrive_path receive_path; do phase "$f" "$size" "$ring"; done
    echo "$row"
  done
done
