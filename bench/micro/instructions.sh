#!/usr/bin/env bash
# bench/micro/instructions.sh BUILD_DIR — instructions per operation of core's host-side hot path:
# core_micro --count N runs each operation (a noinline function) N times under callgrind, and its
# inclusive cost / N is printed. No device needed; N is UNET_MICRO_COUNT (100000).
set -euo pipefail
build=${1:?usage: bench/micro/instructions.sh BUILD_DIR}
# shellcheck source=bench/callgrind.sh
. "$(dirname "$0")/../callgrind.sh"
n=${UNET_MICRO_COUNT:-100000}
cg_run "$cg_dir/cg" -- "$build/bench/core_micro" --count "$n"
callgrind_annotate --inclusive=yes --threshold=100 "$cg_dir/cg" >"$cg_dir/annotated"
printf '%-16s %s\n' operation instructions/op
for op in ring_push_pop compose_inline_op compose_buffer_op buffer_cycle lookup_rc lookup_ud cache_hit cache_hit_last clock_read; do
  # The line naming the function: "  1,234,567 (12.3%)  file:unet::core::(anonymous namespace)::op(...)".
  ir=$(grep -E "::${op}\(" "$cg_dir/annotated" | head -n1 | awk '{gsub(",", "", $1); print $1}')
  [ -n "$ir" ] || { echo "instructions.sh: no callgrind entry for $op" >&2; exit 1; }
  awk -v op="${op%_op}" -v ir="$ir" -v n="$n" 'BEGIN { printf "%-16s %.1f\n", op, ir / n }'
done
