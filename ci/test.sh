#!/usr/bin/env bash
# ci/test.sh — builds unet and runs every test tier; what CI runs (.ci/run) and what README names.
#
#   unit    on this host, always;
#   device  natively when this host has an RDMA device, else inside ci/rxe-vm (SoftRoCE in QEMU);
#   fault   inside ci/rxe-vm --two-dev (rxe0 and rxe1 across a veth pair), when any exist.
#
# Installs missing Debian packages itself. Environment:
#   UNET_BUILD_DIR      build directory (default: build-ci)
#   UNET_SANITIZE       e.g. address,undefined: a sanitizer build
#   UNET_REQUIRE_DEVICE 1 (CI): a device test that would skip fails instead
#   UNET_FORCE_VM       1: use the VM even if this host has a device
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source ci/deps.sh
source ci/device.sh

build=${UNET_BUILD_DIR:-build-ci}
logdir="$build/test-logs"

ensure_unet_deps

echo "== configure and build ($build) =="
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNET_WERROR=ON \
  -DUNET_BUILD_TESTS=ON -DUNET_BUILD_BENCH=ON ${UNET_SANITIZE:+-DUNET_SANITIZE=$UNET_SANITIZE} >/dev/null
cmake --build "$build" -j2
mkdir -p "$logdir"

# Runs one ctest tier, here or in the VM, keeping its output for the summary.
run_tier() {
  local label=$1 where=$2 log="$logdir/$1.log" rc=0
  shift 2
  if [ -z "$(ctest --test-dir "$build" -N -L "^$label\$" | grep -E '^ *Test +#')" ]; then
    echo "== $label: no tests with this label yet =="
    return 0
  fi
  echo "== $label tests ($where) =="
  local cmd=(ctest --test-dir "$build" -L "^$label\$" --output-on-failure --no-tests=error)
  case $where in
    host) "${cmd[@]}" 2>&1 | tee "$log" || rc=$? ;;
    vm) ci/rxe-vm --timeout "${UNET_VM_TIMEOUT:-1500}" "$@" -- "${cmd[@]}" 2>&1 | tee "$log" || rc=$? ;;
  esac
  return "$rc"
}

status=0
run_tier unit host || status=1
if dev=$(host_has_rdma_device) && [ "${UNET_FORCE_VM:-0}" != 1 ]; then
  echo "== this host has RDMA device $dev: device tests run natively =="
  run_tier device host || status=1
  run_tier fault vm --two-dev || status=1
else
  run_tier device vm || status=1
  run_tier fault vm --two-dev || status=1
fi

# One closing line over every tier (ctest prints one per tier).
passed=0 failed=0 skipped=0
for log in "$logdir"/*.log; do
  [ -f "$log" ] || continue
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1) || true
  [ -n "$line" ] || { status=1; echo "test.sh: no ctest summary in $log" >&2; continue; }
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.*tests passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
  s=$(grep -cE '\(Skipped\)|\*\*\*Skipped' "$log" || true)
  passed=$((passed + total - f - s)) failed=$((failed + f)) skipped=$((skipped + s))
done
rm -f "$logdir"/*.log
[ "$failed" -eq 0 ] || status=1
if [ "${UNET_REQUIRE_DEVICE:-0}" = 1 ] && [ "$skipped" -ne 0 ]; then
  echo "test.sh: $skipped test(s) skipped under UNET_REQUIRE_DEVICE=1" >&2
  status=1
fi
echo "test.sh: $passed passed, $failed failed, $skipped skipped"
exit "$status"
