#!/usr/bin/env bash
# ci/memcheck.sh — device tests of a build under valgrind memcheck (issue 7).
#
#   ci/memcheck.sh BUILD_DIR                  the CI subset below
#   ci/memcheck.sh BUILD_DIR FILTER...        the gtest FILTERs (joined with ':') in every device
#                                             test executable that has a test matching them
#   ci/memcheck.sh BUILD_DIR --all            every device test executable whole, and the examples
#                                             (by hand; its size and run time: tests/README.md)
#
# Meant for a device: inside the VM, `ci/rxe-vm --timeout 900 -- ci/memcheck.sh build`. Sets
# UNET_REQUIRE_DEVICE=1, so a missing device fails instead of passing by skipping.
#
# Any memcheck error fails: invalid reads and writes, uses of uninitialised values, bad frees,
# syscall parameters pointing at unaddressable or undefined bytes, and leaks that are "definitely
# lost" (nothing points at the block any more). "Possibly lost" and "still reachable" blocks are
# not errors: rdma-core keeps its device list and contexts in globals until exit. A failing gtest
# test or example fails too. Library internals valgrind misreads are suppressed in ci/valgrind.supp,
# by library object only; nothing in unet's own code is suppressed. Each suppressed or reported
# error comes with a ready suppression (--gen-suppressions=all) in the log, for the reviewer.
#
# The CI subset (the list below): tests that carry checked data through the device and tear
# everything down (the data path and every destructor), one gtest process per layer, because
# under TCG valgrind's own start is most of a short test's time (so the examples, one process
# each, stay in --all; tests/README.md has the times):
#
#   tests/unet_device_tests          core endpoints RC and UD (base level), direct access with the
#                                    registration cache (re-registration, eviction), memory windows,
#                                    emulated endpoints, RC channels through rdma_cm
#   tests/uam/unet_uam_device_tests  uam requests and replies over RC and UD
#   tests/ulp/unet_ulp_device_tests  ulp datagrams (fragmented, 0 B to 64 KiB) and the stream
#
# The tests' own timeouts are not scaled (no test reads a scale); the subset is the tests that pass
# under valgrind as they are, with their assertions untouched.
#
# Output: each run's valgrind log in BUILD_DIR/memcheck/ (one per process), the gtest output on the
# terminal, errors quoted at the end, then one line:
#   memcheck: N tests in M executables, E errors[, F failed]
# Exit status 0 only with no error and no failure. Environment: UNET_MEMCHECK_VALGRIND_ARGS, more
# valgrind options (e.g. --track-origins=yes to find where an uninitialised value came from);
# UNET_MEMCHECK_LOGDIR, where the logs go instead (emptied of *.log first).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The CI subset: "executable relative to BUILD_DIR|gtest filter" (empty filter: not a gtest
# program, one test).
subset=(
  "tests/unet_device_tests|Transports/EndpointTest.MixedSizesArriveInOrderIntactWithInlineCounted/*:Direct.ForgottenMemoryIsRegisteredAfreshWhenReused:DirectSmallCache.CacheEvictsToStayUnderItsBound:Window.BindGrantsAccessThroughTheWindowsKey:Emulated.MessagesFromStrangersAreDroppedNotDelivered:EndpointRc.ChannelsThroughRdmaCm"
  "tests/uam/unet_uam_device_tests|Transports/UamTransport.RequestReplyRoundTrips/*"
  "tests/ulp/unet_ulp_device_tests|Datagram.SizesFromZeroTo64KiBArriveWhole:Stream.HandshakeBytesBothWaysAndOrderlyClose"
)
# Every device test executable (gtest programs), for FILTER and --all.
gtest_programs=(
  tests/unet_device_tests
  tests/uam/unet_uam_device_tests
  tests/ulp/unet_ulp_device_tests
  tests/perf/unet_perf_device_tests
  tests/interop/unet_interop_device_tests
)
examples=(
  examples/unet_example_endpoint_pingpong
  examples/unet_example_rdma_write
  examples/unet_example_am_request_reply
  examples/unet_example_stream_echo
)

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
build=$(cd "$1" 2>/dev/null && pwd) || { echo "memcheck.sh: no build directory $1" >&2; exit 2; }
shift
command -v valgrind >/dev/null || { echo "memcheck.sh: valgrind is not installed (ci/deps.sh)" >&2; exit 2; }

runs=()
if [ $# -eq 0 ]; then
  runs=("${subset[@]}")
elif [ "$1" = --all ] && [ $# -eq 1 ]; then
  # The layers' own suites and the examples first; then the suites that mostly drive other
  # processes (unet_perf, perftest, ibv_rc_pingpong), which run natively, not under valgrind.
  for p in "${gtest_programs[@]:0:3}"; do runs+=("$p|*"); done
  for p in "${examples[@]}"; do runs+=("$p|"); done
  for p in "${gtest_programs[@]:3}"; do runs+=("$p|*"); done
else
  filter=$(IFS=:; echo "$*")
  for p in "${gtest_programs[@]}"; do
    [ -x "$build/$p" ] || continue
    # Only executables with a matching test (listing runs natively, in a moment).
    if "$build/$p" --gtest_list_tests --gtest_filter="$filter" | grep -q '^  '; then
      runs+=("$p|$filter")
    fi
  done
  [ ${#runs[@]} -gt 0 ] || { echo "memcheck.sh: no device test matches $filter" >&2; exit 2; }
fi

logdir=${UNET_MEMCHECK_LOGDIR:-$build/memcheck}
mkdir -p "$logdir"
rm -f "$logdir"/*.log

# Why each option:
#   --error-exitcode=42       an error shows in the exit status, apart from a failed test (1) or skip (77)
#   --leak-check=full --errors-for-leak-kinds=definite
#                             a definitely lost block is an error; possibly lost and reachable are not
#   --show-leak-kinds=definite,indirect  only those are listed (indirect: what a lost block held)
#   --fair-sched=yes          the tests poll both endpoints from two threads; valgrind runs one thread
#                             at a time and its default lock lets a spinning thread starve the other
#   --num-callers=40          deep enough to reach unet's frames beneath rdma-core's and libstdc++'s
#   --gen-suppressions=all    a ready suppression under every error, to judge and, if it is truly a
#                             library's, to add to ci/valgrind.supp
#   --log-file=...%p          one log per process (the tests fork children for peers and tools)
vg=(valgrind --tool=memcheck --error-exitcode=42 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite,indirect --fair-sched=yes --num-callers=40
    --suppressions="$root/ci/valgrind.supp" --gen-suppressions=all)
# shellcheck disable=SC2206 # word splitting wanted: extra options from the environment
vg+=(${UNET_MEMCHECK_VALGRIND_ARGS:-})

export UNET_REQUIRE_DEVICE=1
tests=0 programs=0 failed=0 start=$SECONDS
for run in "${runs[@]}"; do
  prog=${run%%|*} filter=${run#*|}
  name=$(basename "$prog")
  exe=$build/$prog
  programs=$((programs + 1))
  if [ ! -x "$exe" ]; then
    echo "memcheck.sh: $exe is not built" >&2
    failed=$((failed + 1))
    continue
  fi
  args=()
  [ -z "$filter" ] || args=(--gtest_filter="$filter")
  echo "== memcheck: $prog${filter:+ --gtest_filter=$filter}"
  t0=$SECONDS
  out=$logdir/$name.out
  "${vg[@]}" --log-file="$logdir/$name.%p.log" "$exe" "${args[@]}" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ -z "$filter" ]; then
    tests=$((tests + 1))
  else
    n=$(sed -nE 's/^\[==========\] ([0-9]+) tests? from .* ran\..*/\1/p' "$out" | tail -n1)
    tests=$((tests + ${n:-0}))
    # gtest passes with no test run at all: a filter that matches nothing is a mistake here.
    [ "${n:-0}" -gt 0 ] || { echo "memcheck.sh: no test ran in $prog" >&2; rc=1; }
  fi
  echo "== memcheck: $prog exit $rc, $((SECONDS - t0)) s"
  # 42 is valgrind's: errors, counted from the logs below; it hides the program's own status, so
  # a failed test shows by gtest's FAILED lines then.
  if [ "$rc" -eq 42 ]; then
    if grep -q '^\[  FAILED  \]' "$out"; then failed=$((failed + 1)); fi
  elif [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
  fi
done

# Errors from every process's log (children included), and the logs that have any.
errors=0
for log in "$logdir"/*.log; do
  [ -f "$log" ] || continue
  e=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) errors?.*/\1/p' "$log" | tail -n1)
  if [ -z "$e" ]; then
    # A process that ended without a summary (killed, or exec'd a tool that was not traced).
    grep -q 'Exit program on first error\|Process terminating' "$log" && {
      echo "memcheck.sh: $log ends without an error summary" >&2; failed=$((failed + 1)); }
    continue
  fi
  if [ "$e" -gt 0 ]; then
    errors=$((errors + e))
    echo "== memcheck: $e error(s) in $log:"
    cat "$log"
  fi
done
summary="memcheck: $tests tests in $programs executables, $errors errors"
[ "$failed" -eq 0 ] || summary+=", $failed failed"
echo "memcheck: $((SECONDS - start)) s under valgrind"
echo "$summary"
[ "$errors" -eq 0 ] && [ "$failed" -eq 0 ]
