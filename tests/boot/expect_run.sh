#!/usr/bin/env bash
# expect_run.sh [--status N] [--within SECONDS] [--match REGEX]... [--crosses-veth BYTES] \
#               -- COMMAND...
# Runs COMMAND, showing its output, and succeeds only when all of these hold:
#   --status N          it exited with N (default 0; "nonzero": anything but 0 and 77)
#   --within SECONDS    it ended within that many seconds (default: no bound)
#   --match REGEX       its output (stdout and stderr) has a line matching REGEX (grep -E)
#   --crosses-veth B    at least B bytes crossed the veth pair (veth0 and veth1 rx_bytes, summed)
# A COMMAND exit status of 77 (skipped: no device) passes through, so ctest's SKIP_RETURN_CODE
# applies.
set -uo pipefail
want=0 within= veth_bytes= matches=()
while [ $# -gt 0 ]; do
  case $1 in
    --status) want=$2; shift 2 ;;
    --within) within=$2; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --crosses-veth) veth_bytes=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "expect_run.sh: no command" >&2; exit 2; }

veth_rx() {
  local sum=0 v
  for v in veth0 veth1; do
    sum=$((sum + $(cat "/sys/class/net/$v/statistics/rx_bytes" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
before=$(veth_rx)
start=$(date +%s.%N)
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
crossed=$(($(veth_rx) - before))
[ "$rc" -eq 77 ] && exit 77

fail=0
if { [ "$want" = nonzero ] && [ "$rc" -eq 0 ]; } || { [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; }; then
  echo "expect_run.sh: exit status $rc, expected $want" >&2
  fail=1
fi
if [ -n "$within" ] && awk -v e="$elapsed" -v w="$within" 'BEGIN { exit !(e > w) }'; then
  echo "expect_run.sh: took ${elapsed} s, more than $within s" >&2
  fail=1
fi
for m in ${matches[@]+"${matches[@]}"}; do
  if ! grep -qE -- "$m" "$out"; then
    echo "expect_run.sh: no line of the output matches '$m'" >&2
    fail=1
  fi
done
if [ -n "$veth_bytes" ] && [ "$crossed" -lt "$veth_bytes" ]; then
  echo "expect_run.sh: $crossed bytes crossed the veth pair, expected at least $veth_bytes" >&2
  fail=1
fi
echo "expect_run.sh: status $rc in ${elapsed} s${veth_bytes:+, $crossed bytes across the veth pair}"
exit "$fail"
