#!/bin/sh
# verbs_pingpong --exchange on the device (BIN is the program): both sides finish and the client
# prints one row of 200 exchanges of 8 B. 77 (skip) without a device, 1 if UNET_REQUIRE_DEVICE=1.
set -u
bin=$1
first=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 2>/dev/null | sort | head -n 1)
dev=${UNET_DEVICE:-${first##*/}}
if [ -z "$dev" ]; then
  [ "${UNET_REQUIRE_DEVICE:-0}" = 1 ] && { echo "no RDMA device, and UNET_REQUIRE_DEVICE=1" >&2; exit 1; }
  exit 77
fi
port=$((20000 + $$ % 10000))
args="-d $dev -p $port -s 8 -n 200 --warmup 10 --exchange --timeout_ms 30000"
# shellcheck disable=SC2086
"$bin" $args >/dev/null 2>&1 &
server=$!
# shellcheck disable=SC2086
out=$("$bin" $args 127.0.0.1 2>&1)
client=$?
wait "$server"
server_status=$?
echo "$out"
if [ "$client" != 0 ] || [ "$server_status" != 0 ]; then
  echo "client $client, server $server_status" >&2
  exit 1
fi
echo "$out" | grep -q "RC SEND/RECV exchange" || { echo "not the exchange's title" >&2; exit 1; }
echo "$out" | grep -Eq '^ *8 +200 +[0-9.]+ ' || { echo "no row for 200 exchanges of 8 B" >&2; exit 1; }
