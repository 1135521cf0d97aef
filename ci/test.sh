#!/usr/bin/env bash
# ci/test.sh — builds unet and runs every test tier; what CI runs (.ci/run) and what README names.
#
#   unit    on this host, always; among them ci/package.sh (a shared build installed, packaged as
#           .deb and used by tests/consumer through find_package and pkg-config);
#   device  natively when this host has an RDMA device, else inside ci/rxe-vm (SoftRoCE in QEMU);
#           among them the tests/consumer ping-pong built against the extracted packages;
#   fault   inside ci/rxe-vm --two-dev (rxe0 and rxe1 across a veth pair, rxe2 and rxe3
#           across another), when any exist;
#   cluster inside ci/rxe-vm --two-dev too: the programs under Open MPI's mpirun on two simulated
#           hosts (ci/sim-hosts: nodeA on rxe0, nodeB on rxe1), wired up through PMIx.
# Then the same tiers again from a second build, without bench/, with AddressSanitizer and
# UndefinedBehaviorSanitizer (any report fails its test: -fno-sanitize-recover). The VM shares this
# root, so the sanitizer build runs there unchanged.
# After the normal build's tiers, valgrind memcheck runs ci/memcheck.sh's subset of the device
# tests (any memcheck error or definite leak fails).
# Then a ThreadSanitizer pass (BUILD_DIR-tsan): only the executables labelled `tsan` (the ones
# whose code or tests run threads) are built; their unit tests run here, their device tests
# where the device tier runs. A report fails its test (halt_on_error).
# Then unet::boot built without PMIx (BUILD_DIR-nopmix, UNET_PMIX=OFF): its unit tests.
# Last, the fuzz tier: a clang build (BUILD_DIR-fuzz, UNET_FUZZ=ON) whose libFuzzer targets, one
# per wire format, each run for UNET_FUZZ_SECONDS from their checked-in seeds (cmake/run_fuzzer.sh;
# the corpus they grow is kept in BUILD_DIR-fuzz/fuzz/). A crash fails its test.
# The trees after the first build in the background, at nice 19, while the earlier tiers run.
# A VM tier's ctest stops every test 2 minutes before the VM's timeout, so a hang still ends in a
# summary; a tier that ends without one has its last lines printed at the end.
#
# Installs missing Debian packages itself. Environment:
#   UNET_BUILD_DIR      build directory (default: build-ci; the sanitizer pass uses BUILD_DIR-san)
#   UNET_SANITIZE       sanitizers of the main build (default none)
#   UNET_SANITIZE_PASS  sanitizers of the second pass (default address,undefined; empty: no pass)
#   UNET_TSAN_PASS      0: no ThreadSanitizer pass (default 1)
#   UNET_NOPMIX_PASS    0: no UNET_PMIX=OFF build (default 1)
#   UNET_MEMCHECK       0: no valgrind memcheck step (default 1)
#   UNET_REQUIRE_DEVICE 1 (CI): a device test that would skip fails instead
#   UNET_FORCE_VM       1: use the VM even if this host has a device
#   UNET_FUZZ_SECONDS   seconds each fuzz target runs (default 10 here, 20 by hand through ctest;
#                       0: no fuzz tier)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source ci/deps.sh
source ci/device.sh

build=${UNET_BUILD_DIR:-build-ci}
logdir="$build/test-logs"

ensure_unet_deps

# Where the device tiers (and memcheck) run: here when this host has an RDMA device (unless
# UNET_FORCE_VM=1), else in the VM. The fault and cluster tiers always run in the VM (--two-dev).
device_where=vm
if dev=$(host_has_rdma_device) && [ "${UNET_FORCE_VM:-0}" != 1 ]; then
  device_where=host
  # The rdma_cm tests need the device's IP address: its netdev's, unless given.
  export_device_address "${UNET_DEVICE:-$dev}"
  echo "== this host has RDMA device $dev${UNET_RXE_ADDR0:+ (address $UNET_RXE_ADDR0)}: device tests run natively =="
fi

# Configures and builds one tree: build_tree DIR [SANITIZERS [TARGET...]] (every target if none).
# With bench/ unless the caller's `bench` says OFF.
build_tree() {
  local dir=$1 san=${2:-}
  shift $(($# < 2 ? $# : 2))
  echo "== configure and build ($dir${san:+, sanitizers $san}${1:+, targets $*}) at ${SECONDS} s =="
  # Line tables only (-g1): reports and valgrind keep file:line, and the trees compile faster.
  # A sanitizer tree also compiles at -O1, the level the sanitizers' documentation suggests, and
  # builds much faster than at -O2 -g (tests/README.md has the figures).
  local flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
  [ -z "$san" ] || flags=(-DUNET_SANITIZE="$san" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNET_WERROR=ON \
    -DUNET_BUILD_TESTS=ON -DUNET_BUILD_BENCH="${bench:-ON}" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j2 ${1:+--target "$@"}
}

# Runs one ctest tier of one tree, here or in the VM, keeping its output for the summary:
# run_tier TREE LABEL WHERE LOGNAME [rxe-vm options]. LABEL may be A+B: tests with both labels.
run_tier() {
  local tree=$1 label=$2 where=$3 log="$logdir/$4.log" rc=0 l
  shift 4
  local select=()
  for l in ${label//+/ }; do select+=(-L "^$l\$"); done
  if [ -z "$(ctest --test-dir "$tree" -N "${select[@]}" | grep -E '^ *Test +#')" ]; then
    echo "== $label: no tests with this label yet =="
    return 0
  fi
  echo "== $label tests ($tree, $where) at ${SECONDS} s =="
  rm -f "$tree/Testing/Temporary/LastTest.log"  # count_cases reads this run's or none
  local cmd=(ctest --test-dir "$tree" "${select[@]}" --output-on-failure --no-tests=error)
  case $where in
    host) "${cmd[@]}" 2>&1 | tee "$log" || rc=$? ;;
    vm)
      # ctest ends every test 2 minutes before the VM's timeout (half-way through a short one),
      # at a time of day taken in the VM (its start may first build its kernel): a hang fails its
      # test, and the tier still prints its summary and that test's output.
      local vm_timeout=${UNET_VM_TIMEOUT:-1500}
      local stop=$((vm_timeout > 240 ? vm_timeout - 120 : vm_timeout / 2))
      ci/rxe-vm --timeout "$vm_timeout" "$@" -- bash -c \
        'exec "$@" --stop-time "$(date -d "+$0 seconds" +%H:%M:%S)"' "$stop" \
        "${cmd[@]}" 2>&1 | tee "$log" || rc=$? ;;
  esac
  if [ "$rc" != 0 ]; then
    echo "== $label tests ($tree): the end of what each failed test printed =="
    failed_digest "$log"
  fi
  count_cases "$tree"
  return "$rc"
}

# The GoogleTest cases that passed in a tree's last ctest run, added to `cases`: a device tier's
# test is a whole suite (cmake/unet_gtest_suites.cmake), so ctest's count says less there. The
# log is removed before each run: a run that ends without writing one counts nothing, not the last.
cases=0
count_cases() {
  local n
  n=$({ grep -hoE '^\[  PASSED  \] [0-9]+ tests?\.' "$1/Testing/Temporary/LastTest.log" 2>/dev/null ||
    true; } | awk '{s += $4} END {print s + 0}')  # no log, or no match: 0 (and no exit under set -e)
  cases=$((cases + n))
}

# Each failed test's result line and the last 30 lines it printed, from a ctest log
# (--output-on-failure): next to ctest's list of failed tests, where a reader of CI looks first.
failed_digest() {
  awk '
    function flush(  i) {
      if (!inb) return
      print head
      for (i = (n > 30 ? n - 30 : 0); i < n; i++) print "    " buf[i % 30]
      inb = 0
    }
    /^ *Start +[0-9]+: / || /^[0-9]+% tests passed/ { flush(); next }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
      flush()
      if ($0 !~ / Passed +[0-9.]+ sec$/ && $0 !~ /Skipped/) { inb = 1; head = $0; n = 0 }
      next
    }
    inb { buf[n++ % 30] = $0 }
    END { flush() }
  ' "$1"
}

# Every tier of one tree: run_tiers TREE LOG-PREFIX.
run_tiers() {
  local tree=$1 prefix=$2 rc=0
  run_tier "$tree" unit host "${prefix}unit" || rc=1
  run_tier "$tree" device "$device_where" "${prefix}device" || rc=1
  run_tier "$tree" fault vm "${prefix}fault" --two-dev || rc=1
  run_tier "$tree" cluster vm "${prefix}cluster" --two-dev --mem 4096 || rc=1  # 64 ranks
  return "$rc"
}

# valgrind memcheck of the device suite's CI subset (ci/memcheck.sh), from the normal build, where
# the device tier runs. Its closing line is kept for the summary.
run_memcheck() {
  local tree=$1 rc=0
  echo "== memcheck ($tree: ci/memcheck.sh's CI subset) at ${SECONDS} s =="
  case $device_where in
    host) ci/memcheck.sh "$tree" 2>&1 | tee "$build/memcheck.out" || rc=$? ;;
    vm) ci/rxe-vm --timeout 900 -- ci/memcheck.sh "$tree" 2>&1 | tee "$build/memcheck.out" || rc=$? ;;
  esac
  memcheck_line=$(grep -E '^memcheck: ' "$build/memcheck.out" | tail -n1) || true
  [ -n "$memcheck_line" ] || { memcheck_line="memcheck: no closing line"; rc=1; }
  return "$rc"
}

# The later trees, each a function the background builder (below) runs.
# Without bench/: unet_perf and its tests, the interop tests and the compare run in the normal tree
# only. They were about a third of this tree's build and of its device tier, and the library
# code they drive is the one the core, uam and ulp tests run here (tests/README.md).
build_san() {
  local bench=OFF
  build_tree "$build-san" "$sanitize_pass"
}
build_tsan() { build_tree "$build-tsan" thread unet_tsan_tests; }  # cmake/unet_test_labels.cmake
# unet::boot without PMIx (UNET_PMIX=OFF): only what its unit tests need, unoptimized (they check
# what builds and what it says, not speed).
build_nopmix() {
  echo "== configure and build ($build-nopmix, UNET_PMIX=OFF) at ${SECONDS} s =="
  cmake -S . -B "$build-nopmix" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNET_WERROR=ON \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -DNDEBUG" \
    -DUNET_PMIX=OFF -DUNET_BUILD_TESTS=ON -DUNET_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build-nopmix" -j2 --target unet_boot_unit_tests uam_sample_sort
}
# The fuzz tree (clang, UNET_FUZZ=ON): the targets and what they link, only.
build_fuzz() {
  echo "== configure and build ($build-fuzz, clang, libFuzzer targets) at ${SECONDS} s =="
  cmake -S . -B "$build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNET_WERROR=ON \
    -DCMAKE_CXX_COMPILER=clang++ -DUNET_FUZZ=ON -DUNET_BUILD_TESTS=OFF -DUNET_BUILD_BENCH=OFF \
    -DUNET_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build-fuzz" -j2 --target unet_fuzzers
}

# The later trees build one after another in the background, at the lowest CPU priority, while
# the earlier trees' tiers run: the VM leaves about 40% of this host's CPU idle (vmstat over a
# device tier), and a nice 19 build takes little from it when it is busy. Each build's output
# waits in $bg/NAME.log and is printed when that tree's tiers come.
bg=$build/background-builds
bg_pid=
start_background_builds() {
  rm -rf "$bg"
  mkdir -p "$bg"
  [ "$#" -gt 0 ] || return 0
  set -m  # the builder gets a process group of its own, which the EXIT trap ends
  (
    renice -n 19 -p "$BASHPID" >/dev/null  # what it starts inherits the priority
    for job in "$@"; do
      rc=0
      "$job" >"$bg/$job.log" 2>&1 || rc=$?
      echo "$rc" >"$bg/$job.rc"
    done
  ) &
  bg_pid=$!
  set +m
}
trap '[ -z "$bg_pid" ] || kill -- -"$bg_pid" 2>/dev/null || true' EXIT
# await_build JOB: waits (up to an hour) for that background build, prints its output, and fails
# as it did.
await_build() {
  local job=$1 waited=0
  while [ ! -f "$bg/$job.rc" ] && [ "$waited" -lt 3600 ]; do sleep 2; waited=$((waited + 2)); done
  cat "$bg/$job.log" 2>/dev/null || true
  if [ ! -f "$bg/$job.rc" ]; then
    echo "test.sh: the background build $job did not finish within an hour" >&2
    return 1
  fi
  [ "$(cat "$bg/$job.rc")" = 0 ] || { echo "test.sh: the background build $job failed" >&2; return 1; }
  echo "== ($job ran in the background; its tiers waited $waited s for it) =="
}
# planned JOB: whether that tree was to be built. Its tiers run only after await_build JOB.
planned() { [[ " ${later[*]-} " == *" $1 "* ]]; }

status=0
memcheck_line="memcheck: not run"
sanitize_pass=${UNET_SANITIZE_PASS-address,undefined}
export UNET_FUZZ_SECONDS=${UNET_FUZZ_SECONDS:-10}  # six targets, two at a time: 30 s of wall time
later=()
if [ -z "${UNET_SANITIZE:-}" ]; then
  [ -z "$sanitize_pass" ] || later+=(build_san)
  [ "${UNET_TSAN_PASS:-1}" = 0 ] || later+=(build_tsan)
  [ "${UNET_NOPMIX_PASS:-1}" = 0 ] || later+=(build_nopmix)
fi
[ "$UNET_FUZZ_SECONDS" = 0 ] || later+=(build_fuzz)

build_tree "$build" "${UNET_SANITIZE:-}"
mkdir -p "$logdir"
rm -f "$logdir"/*.log
start_background_builds ${later[@]+"${later[@]}"}
run_tiers "$build" "" || status=1
if [ "${UNET_MEMCHECK:-1}" != 0 ] && [ -z "${UNET_SANITIZE:-}" ]; then
  run_memcheck "$build" || status=1
fi
if planned build_san; then
  if await_build build_san; then run_tiers "$build-san" "san-" || status=1; else status=1; fi
fi
if planned build_tsan; then
  if await_build build_tsan; then
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
    run_tier "$build-tsan" tsan+unit host tsan-unit || status=1
    run_tier "$build-tsan" tsan+device "$device_where" tsan-device || status=1
  else
    status=1
  fi
fi
# Built without PMIx (UNET_PMIX=OFF): unet::boot's fork launcher, plans and meshes still build and
# work, and asking for PMIx is a clear error.
if planned build_nopmix; then
  if await_build build_nopmix; then
    echo "== boot unit tests ($build-nopmix, host) at ${SECONDS} s =="
    rm -f "$build-nopmix/Testing/Temporary/LastTest.log"
    ctest --test-dir "$build-nopmix" -L '^unit$' -R '^boot\.' --output-on-failure --no-tests=error 2>&1 |
      tee "$logdir/nopmix-unit.log" || status=1
    count_cases "$build-nopmix"
  else
    status=1
  fi
fi
if planned build_fuzz; then
  if await_build build_fuzz; then
    # Two at a time: each runs for a fixed time on one core, so this halves the tier's wall time.
    CTEST_PARALLEL_LEVEL=2 run_tier "$build-fuzz" fuzz host fuzz || status=1
    # How far each target got (cmake/run_fuzzer.sh's closing line; ctest shows passing tests'
    # output only in its log).
    grep -h 'executions in' "$build-fuzz/Testing/Temporary/LastTest.log" || true
  else
    status=1
  fi
fi

# One closing line over every tier (ctest prints one per tier).
passed=0 failed=0 skipped=0
for log in "$logdir"/*.log; do
  [ -f "$log" ] || continue
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1) || true
  if [ -z "$line" ]; then
    # ctest did not finish (a VM timeout, a crash): what it printed last says where it stopped.
    status=1
    echo "test.sh: no ctest summary in $log; the last tests it started, what ci/rxe-vm's" \
      "watchdog saw running, the blocked tasks and its last 15 lines:" >&2
    { grep -E '^ *Start +[0-9]+: ' "$log" | tail -n 3
      sed -n '/^unet-vm watchdog: the command/,/^unet-vm watchdog: end/p' "$log" | head -n 100
      sed -n '/^rxe-vm: --- the blocked tasks/,/^rxe-vm: --- last 50 lines/p' "$log" | head -n 60
      tail -n 15 "$log"; } | sed 's/^/    /' >&2
    continue
  fi
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.*tests passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
  s=$(grep -cE '\(Skipped\)|\*\*\*Skipped' "$log" || true)
  passed=$((passed + total - f - s)) failed=$((failed + f)) skipped=$((skipped + s))
  # Failed tests again at the very end, by tier: a reader of CI often sees only the last lines.
  if [ "$f" != 0 ]; then
    sed -n '/The following tests FAILED:/,/^Errors while running/p' "$log" |
      grep -E '^[[:space:]]+[0-9]+ - ' | sed "s|^|test.sh: failed in $(basename "$log" .log): |"
    failed_digest "$log" | tail -n 40
  fi
done
rm -f "$logdir"/*.log
[ "$failed" -eq 0 ] || status=1
if [ "${UNET_REQUIRE_DEVICE:-0}" = 1 ] && [ "$skipped" -ne 0 ]; then
  echo "test.sh: $skipped test(s) skipped under UNET_REQUIRE_DEVICE=1" >&2
  status=1
fi
echo "test.sh: every step took $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "test.sh: $passed passed, $failed failed, $skipped skipped (ctest tests; $cases GoogleTest" \
  "cases passed in them); $memcheck_line"
exit "$status"
