# bench/callgrind.sh — sourced by bench/'s instruction counts (instructions.sh, ring/*.sh, micro/*.sh):
# run a program under callgrind, beside a plain server if it needs one, and sum its self costs by
# layer. Sourcing it makes a scratch directory, $cg_dir, removed (and the server stopped) at exit.
# shellcheck shell=bash
shopt -s inherit_errexit  # set -e inside $(...) too
cg_dir=$(mktemp -d)
cg_server_pid=
trap 'rm -rf "$cg_dir"; [ -z "$cg_server_pid" ] || kill "$cg_server_pid" 2>/dev/null || true' EXIT

# cg_run OUT [VALGRIND_ARGS...] -- COMMAND...: COMMAND under callgrind into the file OUT, its output
# into OUT.out and valgrind's into OUT.log; exits with their tails if it fails.
cg_run() {
  local out=$1 vg=()
  shift
  while [ "$1" != -- ]; do vg+=("$1"); shift; done
  shift
  timeout 900 valgrind --tool=callgrind "${vg[@]}" --callgrind-out-file="$out" --log-file="$out.log" "$@" \
    >"$out.out" 2>&1 || { echo "callgrind run failed: $*" >&2; tail -n 5 "$out.out" "$out.log" >&2; exit 1; }
}

# cg_server COMMAND...: COMMAND in the background (output in $cg_dir/server.log), given 2 s to listen;
# cg_server_wait waits for it to end.
cg_server() {
  timeout 900 "$@" >"$cg_dir/server.log" 2>&1 &
  cg_server_pid=$!
  sleep 2
}
cg_server_wait() {
  wait "$cg_server_pid" || true  # the client's run is what counts (a perftest server may complain)
  cg_server_pid=
}

# cg_functions FILE: FILE's self cost per function, one "COST<tab>FILE:FUNCTION [BINARY]" line each.
cg_functions() {
  callgrind_annotate --auto=no --threshold=100 "$1" | awk '
    $1 ~ /^[0-9,]+$/ && $2 ~ /^\(/ && !/PROGRAM TOTALS/ {
      c = $1; gsub(",", "", c); s = $0; sub(/^[^)]*\) */, "", s); print c "\t" s }'
}

# cg_classes FILE [REGEX]: FILE's self costs summed into "total verbs uam core other". verbs:
# libibverbs, the provider (librxe), its spinlock and doorbell write(), and functions matching
# REGEX; uam, core: functions in namespace unet::uam, unet::core; other: the rest.
cg_classes() {
  local verbs="libibverbs|librxe|pthread_spin|write[.]c${2:+|$2}"
  cg_functions "$1" | awk -F'\t' -v verbs="$verbs" '
    { t += $1
      if ($2 ~ verbs) v += $1
      else if ($2 ~ /:unet::uam::/) u += $1
      else if ($2 ~ /:unet::core::/) c += $1
      else o += $1 }
    END { printf "%.0f %.0f %.0f %.0f %.0f\n", t, v, u, c, o }'
}

# cg_total FILE: FILE's total cost.
cg_total() { sed -n 's/^totals: //p' "$1"; }

# cg_report FILE: the inclusive cost of a latency client's statistics after its loop — the sort of
# its samples and what is figured from them: libc's qsort (perftest's, with its comparator) and
# unet_perf's round_trip_latency (else unet::bench::compute_latency, the ping-pongs'). It grows as
# n log n, so it is no cost per iteration; every part of it is in cg_classes' "other".
cg_report() {
  callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" | awk '
    function cost() { c = $1; gsub(",", "", c); return c + 0 }
    $1 ~ /^[0-9,]+$/ && / \(/ {
      if ($0 ~ /:qsort \[/) q += cost()
      else if ($0 ~ /:unet::perf::round_trip_latency\(/) r += cost()
      else if ($0 ~ /:unet::bench::compute_latency\(/) l += cost() }
    END { printf "%.0f\n", q + (r > 0 ? r : l) }'
}

# cg_per "A..." "B..." LOW HIGH: each (B - A) / (HIGH - LOW), truncated: the per-iteration
# difference of counts at LOW and HIGH iterations, which cancels set-up and warm-up.
cg_per() {
  awk -v a="$1" -v b="$2" -v d="$(($4 - $3))" 'BEGIN {
    n = split(a, x); split(b, y)
    for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), int((y[i] - x[i]) / d)
    print "" }'
}
