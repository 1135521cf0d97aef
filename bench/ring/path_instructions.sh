#!/usr/bin/env bash
# bench/ring/path_instructions.sh BUILD_DIR — instructions per message of each phase of a small
# message through core, ring channel beside plain channel, at 8 and 64 bytes: callgrind's cost
# of each phase of unet_message_path (send + the poll that posts it, the poll that finds it,
# receive + release), each counted alone (--toggle-collect), the provider's calls included; and
# of those, the provider's own (librxe, libibverbs, and the libc calls they make). Runs where an
# RDMA device exists (e.g. `ci/rxe-vm -- bench/ring/path_instructions.sh build-release`).
set -euo pipefail
build=${1:?usage: bench/ring/path_instructions.sh BUILD_DIR}
tool=$build/bench/unet_message_path
out=$(mktemp -d -p "$build")
trap 'rm -rf "$out"' EXIT
count=1000
messages=$((2 * count))
phase() {  # phase FUNCTION SIZE RING: "total provider" instructions per message
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect="*$1*" "$tool" -s "$2" \
    --count "$count" "$3" >"$out/stdout" 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  grep -q ', 0 found late' "$out/stdout" || { echo "$1: some arrivals were late: $(cat "$out/stdout")" >&2; exit 1; }
  callgrind_annotate --auto=no --threshold=100 "$out/cg" | awk -v n="$messages" '
    $1 ~ /^[0-9,]+$/ { gsub(",", "", $1) }
    /PROGRAM TOTALS/ { total = $1 }
    $1 ~ /^[0-9]+$/ && /librxe|libibverbs|pthread_spin|write\.c|memmove|memcpy|memset/ { verbs += $1 }
    END { printf "%d %d", total / n, verbs / n }'
}
printf '%-5s %-7s %18s %18s %18s\n' size channel "send+post (verbs)" "arrive (verbs)" "receive (verbs)"
for size in 8 64; do
  for ring in --ring --noring; do
    read -r s sv <<<"$(phase send_path "$size" "$ring")"
    read -r a av <<<"$(phase arrive_path "$size" "$ring")"
    read -r r rv <<<"$(phase receive_path "$size" "$ring")"
    printf '%-5s %-7s %10d (%5d) %10d (%5d) %10d (%5d)\n' "$size" "${ring#--}" "$s" "$sv" "$a" "$av" "$r" "$rv"
  done
done
