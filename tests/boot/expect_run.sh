#!/usr/bin/env bash
# expect_run.sh [--status N] [--within SECONDS] [--match REGEX]... [--crosses-veth BYTES] \
#               [--deadline SECONDS] -- COMMAND...
# Runs COMMAND in a session of its own, its output in a file that is shown when it ends, and
# succeeds only when all of these hold:
#   --status N          it exited with N (default 0; "nonzero": anything but 0 and 77)
#   --within SECONDS    it ended within that many seconds (default: no bound)
#   --match REGEX       its output (stdout and stderr) has a line matching REGEX (grep -E)
#   --crosses-veth B    at least B bytes crossed the veth pair (veth0 and veth1 rx_bytes, summed)
#   --deadline SECONDS  it ended within that many seconds; if not, what still runs (with the
#                       kernel stacks of blocked tasks) is shown and its session is killed.
#                       Set below ctest's TIMEOUT: ctest's own kill shows nothing, and a process
#                       that ctest cannot kill (blocked in the kernel) keeps ctest waiting on the
#                       output pipe, which here only this script holds.
# Processes of the session that outlive COMMAND are named and killed.
# A COMMAND exit status of 77 (skipped: no device) passes through, so ctest's SKIP_RETURN_CODE
# applies.
set -uo pipefail
want=0 within='' veth_bytes='' deadline='' matches=()
while [ $# -gt 0 ]; do
  case $1 in
    --status) want=$2; shift 2 ;;
    --within) within=$2; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --crosses-veth) veth_bytes=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
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

# The processes of session $1 (state, wait channel, name), then each blocked task's kernel stack.
show_session() {
  ps -s "$1" -o pid,ppid,stat,etimes,wchan:24,comm 2>/dev/null
  local p
  for p in $(ps -e -o pid=,stat= 2>/dev/null | awk '$2 ~ /^D/ {print $1}'); do
    echo "  blocked: $p ($(cat "/proc/$p/comm" 2>/dev/null)), kernel stack:"
    head -n 12 "/proc/$p/stack" 2>/dev/null | sed 's/^/    /'
  done
}

# signal_session SIGNAL SID: every process of the session (the launchers put some in process
# groups of their own, which a group kill would miss).
signal_session() {
  local p
  for p in $(ps -s "$2" -o pid= 2>/dev/null); do kill "-$1" "$p" 2>/dev/null; done
  return 0
}

# wait_bounded PID SECONDS: its status if PID (a job of this shell) ends within SECONDS; 124 if
# it does not (a process blocked in the kernel may never end). This shell reaps its jobs as they
# end and keeps their status for wait. Polls: wait -n over a sleeper races with ended jobs.
wait_bounded() {
  local i
  {  # not "Killed" when this shell reaps it: the caller says what ended it
    for ((i = 0; i < $2 * 4; i++)); do
      kill -0 "$1" || break
      sleep 0.25
    done
    ! kill -0 "$1" || return 124
    wait "$1"
  } 2>/dev/null
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
before=$(veth_rx)
start=$(date +%s.%N)
# A background job of this (job-control-less) shell is not a group leader: setsid makes COMMAND
# the leader of a new session, whose id is its pid.
setsid "$@" >"$out" 2>&1 </dev/null &
pid=$!
late=''
if [ -n "$deadline" ]; then
  wait_bounded "$pid" "$deadline"
  rc=$?
  if [ "$rc" = 124 ] && kill -0 "$pid" 2>/dev/null; then
    late=$(show_session "$pid")
    signal_session TERM "$pid"  # the launchers' clean-up runs on TERM
    wait_bounded "$pid" 10
    [ $? != 124 ] || { signal_session KILL "$pid"; wait_bounded "$pid" 5; }
    rc=124
  fi
else
  { wait "$pid"; } 2>/dev/null
  rc=$?
fi
left=$(ps -s "$pid" -o pid=,comm= 2>/dev/null | tr -s ' \n' ' ')
[ -z "$left" ] || signal_session KILL "$pid"
cat "$out"
if [ -n "$late" ]; then
  echo "expect_run.sh: still running after $deadline s, killed; its session:" >&2
  echo "$late" >&2
elif [ -n "$left" ]; then
  echo "expect_run.sh: outlived the command, killed:$left" >&2
fi
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
crossed=$(($(veth_rx) - before))
[ "$rc" -eq 77 ] && exit 77

fail=0
if { [ "$want" = nonzero ] && [ "$rc" -eq 0 ]; } || { [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; }; then
  echo "expect_run.sh: exit status $rc${late:+ (killed at the deadline)}, expected $want" >&2
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
