#!/usr/bin/env bash
# Sourced helper: does this host have an RDMA device of its own (a real NIC or host rxe)?
# host_has_rdma_device prints the first device's name and succeeds, or fails silently.
host_has_rdma_device() {
  local dev
  [ -d /sys/class/infiniband ] || return 1
  dev=$(ls /sys/class/infiniband 2>/dev/null | head -n1)
  [ -n "$dev" ] || return 1
  echo "$dev"
}
