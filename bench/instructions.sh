#!/usr/bin/env bash
# bench/instructions.sh [--toggle FUNCTION]... [--functions N] TOOL ARGS... — instructions per iteration of a
# ping-pong or stream client (unet_perf, unet_pingpong, verbs_pingpong, ucx_perftest, a perftest), by layer,
# under callgrind beside a plain server; --toggle counts only inside FUNCTION; --functions also lists the N
# costliest functions per iteration (self cost). Each count is the least of UNET_INSTRUCTIONS_REPS runs
# (2); the client's statistics after its loop (its samples' sort) are left out of the total and shown
# apart. On a device, e.g. `ci/rxe-vm --timeout 2400 --
# bench/instructions.sh build/bench/unet_perf --test am_lat -s 8`; recipes in bench/README.md.
set -euo pipefail
# shellcheck source=bench/callgrind.sh
. "$(dirname "$0")/callgrind.sh"
toggles=() where='' functions=0
while [ "${1:-}" = --toggle ] || [ "${1:-}" = --functions ]; do
  if [ "$1" = --toggle ]; then toggles+=("--toggle-collect=$2") where+=" $2"; else functions=$2; fi
  shift 2
done
[ $# -ge 1 ] || { echo "usage: bench/instructions.sh [--toggle FUNCTION]... [--functions N] TOOL ARGS..." >&2; exit 2; }
tool=$1
shift
args=("$@")
devs=(/sys/class/infiniband/*)
dev=${UNET_DEVICE:-${devs[0]##*/}}
port=${UNET_INSTRUCTIONS_PORT:-18541}
count() {  # count N: the client of N iterations under callgrind, into $cg_dir/N (the least of reps)
  local n=$1 rep best='' got
  for ((rep = 1; rep <= reps; rep++)); do
    count_once "$n"
    got=$(cg_total "$cg_dir/once")
    if [ -z "$best" ] || [ "$got" -lt "$best" ]; then
      best=$got
      for f in "$cg_dir/once"*; do mv "$f" "$cg_dir/$n${f#"$cg_dir/once"}"; done
    fi
  done
}
count_once() {  # count_once N: one run into $cg_dir/once
  local n=$1 server client
  case $(basename "$tool") in
    ucx_perftest)
      server=("$tool" -p "$port")
      client=("$tool" -p "$port" 127.0.0.1 -d "$dev:1" "${args[@]}" -n "$n") ;;
    unet_perf | unet_pingpong | verbs_pingpong)
      server=("$tool" -d "$dev" -p "$port" -n "$n" --timeout_ms 300000 "${args[@]}")
      client=("${server[@]}" 127.0.0.1) ;;
    *)  # perftest's
      server=("$tool" -d "$dev" -p "$port" -n "$n" -F "${args[@]}")
      client=("${server[@]}" 127.0.0.1) ;;
  esac
  cg_server "${server[@]}"
  cg_run "$cg_dir/once" "${toggles[@]}" -- "${client[@]}"
  cg_server_wait
}
lo=${UNET_INSTRUCTIONS_LOW:-500} hi=${UNET_INSTRUCTIONS_HIGH:-5500}
# Runs per count: a client's total moves between runs with what it did while it waited (its
# connection's set-up, idle polls), never below its work, so the least of several is the one kept.
reps=${UNET_INSTRUCTIONS_REPS:-2}
count "$lo"
count "$hi"
a=$(cg_classes "$cg_dir/$lo")
b=$(cg_classes "$cg_dir/$hi")
per=$(cg_per "$a" "$b" "$lo" "$hi")
read -r total verbs uam core other <<<"$per"
# The statistics after the loop are no work of an iteration: out of the total and of "other"
# (inside a --toggle'd function there are none).
report=0
[ -n "$where" ] || report=$(cg_per "$(cg_report "$cg_dir/$lo")" "$(cg_report "$cg_dir/$hi")" "$lo" "$hi")
total=$((total - report)) other=$((other - report))
echo "$(basename "$tool") ${args[*]}: client${where:+, inside$where}, instructions per iteration"
printf '  %-13s %6d\n' total "$total"
printf '  %-13s %6d  %s\n' verbs "$verbs" "libibverbs, the provider (librxe), its spinlock, doorbell write()" \
  "total - verbs" $((total - verbs)) "= uam + core + other:" \
  "  uam" "$uam" "namespace unet::uam" "  core" "$core" "namespace unet::core" \
  "  other" "$other" "the rest: the tool's own, std, libc" \
  "not counted" "$report" "the statistics after the loop (the samples' sort: n log n; cg_report)"
if [ "$functions" -gt 0 ]; then
  echo "  the $functions costliest functions, self instructions per iteration:"
  cg_functions "$cg_dir/$lo" >"$cg_dir/lo.fn"
  cg_functions "$cg_dir/$hi" >"$cg_dir/hi.fn"
  awk -F'\t' -v d=$((hi - lo)) 'NR == FNR { a[$2] = $1; next }
    { x = ($1 - a[$2]) / d; f = $2; sub(/ \[[^]]*\]$/, "", f); if (x >= 0.5) printf "  %8.1f  %s\n", x, f }' \
    "$cg_dir/lo.fn" "$cg_dir/hi.fn" |
    sort -rn | awk -v n="$functions" 'NR <= n'
fi
