#!/usr/bin/env bash
# ci/main.sh — the main job: install, build, and run bench/compare (unet beside perftest,
# ucx_perftest, rsockets and kernel TCP, interleaved, with unet / peer ratios, results.json,
# results.md and plots) on whatever RDMA device exists: a real NIC or host rxe if this host has
# one, else SoftRoCE inside ci/rxe-vm. Extra arguments go to bench/compare/compare.py (e.g.
# --rounds 5). The narrower endpoint-vs-ib_send_lat headline is ci/headline.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source ci/deps.sh
source ci/device.sh
build=${UNET_BUILD_DIR:-build-release}

ensure_unet_deps
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUNET_BUILD_TESTS=OFF -DUNET_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2

out=${UNET_COMPARE_OUT:-$root/$build/compare}
if dev=$(host_has_rdma_device) && [ "${UNET_FORCE_VM:-0}" != 1 ]; then
  dev=${UNET_DEVICE:-$dev}
  # The socket peers (rstream, sockperf) need the device's IP address: its netdev's, unless given.
  export_device_address "$dev"
  echo "main: running on this host's device $dev${UNET_RXE_ADDR0:+ (address $UNET_RXE_ADDR0)}"
  UNET_DEVICE=$dev bench/compare/compare.py --build "$build" --out "$out" "$@"
else
  echo "main: no RDMA device on this host; running in the SoftRoCE VM (ci/rxe-vm)"
  # UNET_VM_MTU=9000: the VM's veths with jumbo frames (rxe's active MTU 4096, as RoCE is usually run).
  ci/rxe-vm --timeout 3000 ${UNET_VM_MTU:+--mtu "$UNET_VM_MTU"} -- bench/compare/compare.py --build "$build" --out "$out" "$@"
fi
