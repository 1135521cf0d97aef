#!/bin/sh
# unet_cat end to end: a random file piped through unet_cat between two processes arrives
# byte-identical (sha256), and so does a smaller one the other way at once; both sides exit 0.
#
#   unet_cat_test.sh CAT        label device: 6 MiB, once, on the test device
#   unet_cat_test.sh CAT lossy  label fault (ci/rxe-vm --two-dev): 2 MiB, three times, rxe0 to
#                               rxe1 across the veth pair with netem loss, duplication and
#                               reordering both ways, so that FINs and their ACKs get lost too
#
# Exit 77 (skip) without the device (lossy: the two-device set-up), unless UNET_REQUIRE_DEVICE=1
# makes that a failure.
set -eu
CAT=$1
mode=${2:-plain}
skip() {
  [ "${UNET_REQUIRE_DEVICE:-0}" = 1 ] && { echo "UNET_REQUIRE_DEVICE=1 but $1"; exit 1; }
  echo "$1: skipped"
  exit 77
}
if [ "$mode" = lossy ]; then
  [ "${UNET_RXE_MODE:-}" = two ] || skip "not under ci/rxe-vm --two-dev"
  size=2097152 runs=3 srv_dev="-d rxe0" cli_dev="-d rxe1"
else
  [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ] || skip "no RDMA device"
  size=6291456 runs=1 srv_dev='' cli_dev=''
fi
dir=$(mktemp -d)
srv=
cleanup() {
  [ -z "$srv" ] || kill "$srv" 2>/dev/null || true
  if [ "$mode" = lossy ]; then
    for d in veth0 veth1; do tc qdisc del dev $d root 2>/dev/null || true; done
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
if [ "$mode" = lossy ]; then
  for d in veth0 veth1; do tc qdisc replace dev $d root netem loss 5% duplicate 2% delay 200us reorder 10% 50%; done
fi
head -c $size /dev/urandom >"$dir/up"
head -c 300000 /dev/urandom >"$dir/down"
run=1
while [ $run -le $runs ]; do
  port=$((20000 + ($$ + run) % 20000))
  # shellcheck disable=SC2086  # srv_dev, cli_dev: empty or two words
  timeout 120 "$CAT" -l $port $srv_dev <"$dir/down" >"$dir/up.got" 2>"$dir/srv.err" &
  srv=$!
  crc=0 src=0
  # shellcheck disable=SC2086
  timeout 120 "$CAT" 127.0.0.1 $port $cli_dev <"$dir/up" >"$dir/down.got" 2>"$dir/cli.err" || crc=$?
  wait $srv || src=$?
  srv=
  # Both sides' exit statuses (above 128: killed by signal N-128; 124: timed out) and their
  # stderr, so that a failure says which side failed and how, even when it died without a word.
  echo "run $run, port $port: client exit $crc, server exit $src"
  if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
    echo "client stderr:"; cat "$dir/cli.err"
    echo "server stderr:"; cat "$dir/srv.err"
    echo "bytes received: server $(wc -c <"$dir/up.got") of $size, client $(wc -c <"$dir/down.got") of 300000"
    exit 1
  fi
  a=$(sha256sum <"$dir/up"); b=$(sha256sum <"$dir/up.got")
  c=$(sha256sum <"$dir/down"); d=$(sha256sum <"$dir/down.got")
  echo "client->server $a / $b"
  echo "server->client $c / $d"
  if [ "$a" != "$b" ] || [ "$c" != "$d" ]; then echo "the bytes differ"; exit 1; fi
  run=$((run + 1))
done
if [ "$mode" = lossy ]; then
  drops=0
  for d in veth0 veth1; do
    n=$(tc -s qdisc show dev $d | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p')
    drops=$((drops + ${n:-0}))
  done
  echo "netem dropped $drops packets"
  [ "$drops" -gt 0 ] || { echo "netem dropped nothing: the traffic did not cross the veths"; exit 1; }
fi
