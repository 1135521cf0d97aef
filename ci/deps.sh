#!/usr/bin/env bash
# Installs the Debian packages unet builds and tests with, when any is missing.
# Usage: ci/deps.sh            (sourced by ci/test.sh and ci/main.sh, or run by hand)
# Every dependency is a Debian package; nothing is downloaded at configure or build time.
set -euo pipefail

UNET_BUILD_PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
  libgtest-dev libgmock-dev libbenchmark-dev libgflags-dev
  nlohmann-json3-dev  # unet_perf's --json report, and the tests that read it
  clang-format  # the style.clang_format unit test
  libpmix-dev  # optional for a build (UNET_PMIX=AUTO); unet::boot's PMIx path, which CI tests
)
# ci/package.sh: cpack's Debian generator runs dpkg-shlibdeps (dpkg-dev) and file.
UNET_PACKAGING_PACKAGES=(dpkg-dev file)
# The tools users compare unet with, and the ones the device tests drive (the cluster tests:
# Open MPI's mpirun, ci/sim-hosts; Slurm's srun with its PMIx plugin, ci/sim-slurm).
UNET_TOOL_PACKAGES=(ibverbs-utils rdmacm-utils perftest iproute2 openmpi-bin slurmd slurmctld slurm-client)
# The fuzz tier (ci/test.sh): clang, and libFuzzer with its sanitizer runtimes and
# <fuzzer/FuzzedDataProvider.h> (libclang-rt-dev; on bookworm it pulls libclang-rt-14-dev).
UNET_FUZZ_PACKAGES=(clang libclang-rt-dev)
# bench/compare's other peers (ucx_perftest, sockperf; rstream is in rdmacm-utils; the MPI sample
# sort of bench/compare/cluster_sort.py, built with Open MPI), its plots, and callgrind for the
# instruction counts in bench/.
UNET_COMPARE_PACKAGES=(ucx-utils sockperf python3 python3-matplotlib valgrind libopenmpi-dev)

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

ensure_packages() {
  local missing
  mapfile -t missing < <(missing_packages "$@")
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

ensure_unet_deps() {
  ensure_packages "${UNET_BUILD_PACKAGES[@]}" "${UNET_PACKAGING_PACKAGES[@]}" \
    "${UNET_FUZZ_PACKAGES[@]}" "${UNET_TOOL_PACKAGES[@]}" "${UNET_COMPARE_PACKAGES[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then ensure_unet_deps; fi
