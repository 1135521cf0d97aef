#!/bin/sh
# unet_cat end to end (label device): a 6 MiB random file piped through unet_cat between two
# processes arrives byte-identical (sha256), and so does a smaller one the other way at once.
# Exit 77 (skip) without an RDMA device, unless UNET_REQUIRE_DEVICE=1 makes that a failure.
set -eu
CAT=$1
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  [ "${UNET_REQUIRE_DEVICE:-0}" = 1 ] && { echo "UNET_REQUIRE_DEVICE=1 but no RDMA device"; exit 1; }
  echo "no RDMA device: skipped"; exit 77
fi
dir=$(mktemp -d)
trap 'kill $srv 2>/dev/null || true; rm -rf "$dir"' EXIT
head -c 6291456 /dev/urandom >"$dir/up"
head -c 300000 /dev/urandom >"$dir/down"
port=$((20000 + $$ % 20000))
timeout 120 "$CAT" -l $port <"$dir/down" >"$dir/up.got" 2>"$dir/srv.err" &
srv=$!
crc=0 src=0
timeout 120 "$CAT" 127.0.0.1 $port <"$dir/up" >"$dir/down.got" 2>"$dir/cli.err" || crc=$?
wait $srv || src=$?
# Both sides' exit statuses (above 128: killed by signal N-128; 124: timed out) and their stderr,
# so that a failure says which side failed and how, even when it died without a word.
echo "port $port: client exit $crc, server exit $src"
if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
  echo "client stderr:"; cat "$dir/cli.err"
  echo "server stderr:"; cat "$dir/srv.err"
  echo "bytes received: server $(wc -c <"$dir/up.got") of 6291456, client $(wc -c <"$dir/down.got") of 300000"
  exit 1
fi
a=$(sha256sum <"$dir/up"); b=$(sha256sum <"$dir/up.got")
c=$(sha256sum <"$dir/down"); d=$(sha256sum <"$dir/down.got")
echo "client->server $a / $b"
echo "server->client $c / $d"
[ "$a" = "$b" ] && [ "$c" = "$d" ]
