#!/usr/bin/env bash
# bench/micro/instructions.sh BUILD_DIR — instructions per operation of core's host-side hot path,
# counted by callgrind (deterministic, unlike time): core_micro --count runs each operation N times,
# and each operation is a noinline function whose inclusive cost divided by N is printed. No device.
set -euo pipefail
build=${1:?usage: bench/micro/instructions.sh BUILD_DIR}
n=${UNET_MICRO_COUNT:-100000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$build/bench/core_micro" --count "$n" 2>"$out/log" ||
  { cat "$out/log" >&2; exit 1; }
callgrind_annotate --inclusive=yes --threshold=100 "$out/cg" >"$out/annotated"
printf '%-16s %s\n' operation instructions/op
for op in ring_push_pop compose_inline_op compose_buffer_op buffer_cycle lookup_rc lookup_ud cache_hit; do
  # The line naming the function: "  1,234,567 (12.3%)  file:unet::core::(anonymous namespace)::op(...)".
  ir=$(grep -E "::${op}\(" "$out/annotated" | head -n1 | awk '{gsub(",", "", $1); print $1}')
  [ -n "$ir" ] || { echo "instructions.sh: no callgrind entry for $op" >&2; exit 1; }
  awk -v op="${op%_op}" -v ir="$ir" -v n="$n" 'BEGIN { printf "%-16s %.1f\n", op, ir / n }'
done
