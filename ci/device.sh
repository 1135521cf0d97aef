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

# device_ipv4 DEV prints the first IPv4 address of the netdev behind DEV's port 1 (the RoCE
# netdev, or IPoIB on InfiniBand) and succeeds, or fails silently. The rdma_cm tests and the
# compare's socket peers need it (UNET_RXE_ADDR0).
device_ipv4() {
  local ndev addr f
  ndev=$(rdma link show "$1/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p' | head -n1)
  if [ -z "$ndev" ]; then
    for f in /sys/class/infiniband/"$1"/ports/1/gid_attrs/ndevs/*; do
      ndev=$(cat "$f" 2>/dev/null) && [ -n "$ndev" ] && break
    done
  fi
  [ -n "$ndev" ] || return 1
  addr=$(ip -4 -o addr show dev "$ndev" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1)
  [ -n "$addr" ] || return 1
  echo "$addr"
}

# export_device_address DEV sets UNET_RXE_ADDR0 to DEV's address (device_ipv4) unless it is set.
export_device_address() {
  local addr
  if [ -z "${UNET_RXE_ADDR0:-}" ] && addr=$(device_ipv4 "$1"); then export UNET_RXE_ADDR0=$addr; fi
  return 0
}
