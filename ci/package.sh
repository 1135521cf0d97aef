#!/usr/bin/env bash
# ci/package.sh BUILD_DIR — unet as its users get it, checked end to end without a device:
#   1. builds unet with shared libraries and prefix /usr in BUILD_DIR (what the packages carry);
#   2. `cmake --install` into BUILD_DIR/stage (DESTDIR) and builds tests/consumer against it twice:
#      with find_package(unet CONFIG) and with `pkg-config --cflags --libs unet`;
#   3. cpack: libunet1, libunet-dev, unet-utils in BUILD_DIR/packages, their names, Depends and
#      contents checked with dpkg-deb;
#   4. `dpkg -x` of the three into BUILD_DIR/debroot, and the consumer built both ways again
#      against that root.
# The consumer ping-pongs land in BUILD_DIR/consumer/{stage,deb}-{cmake,pkgconfig}/; the device
# tests (ctest -R package.consumer_pingpong) run the deb-* ones. tests/CMakeLists.txt runs this
# script as the unit test package.install_and_consumer_build.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: ci/package.sh BUILD_DIR" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "$1")
consumer_src="$root/tests/consumer"

fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }
step() { echo "== package.sh: $* =="; }

step "build (shared, prefix /usr) in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNET_SHARED=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DUNET_INSTALL=ON -DUNET_BUILD_TESTS=OFF -DUNET_BUILD_BENCH=ON \
  -DUNET_WERROR=ON -DUNET_SANITIZE= >/dev/null
cmake --build "$build" -j2 --target unet_installable

step "cmake --install into $build/stage"
rm -rf "$build/stage"
DESTDIR="$build/stage" cmake --install "$build" >/dev/null
version=$(sed -n 's/^Version: //p' "$build/unet.pc")
[ -n "$version" ] || fail "no Version in $build/unet.pc"

# The consumer against an installed root, both ways: build_consumer ROOT NAME.
build_consumer() {
  local inst=$1 name=$2 out="$build/consumer/$2"
  local prefix="$inst/usr"
  rm -rf "$out-cmake" "$out-pkgconfig"

  # find_package(unet CONFIG) from ROOT and nowhere else (not a system-wide libunet-dev).
  cmake -S "$consumer_src" -B "$out-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >/dev/null
  grep -q "^unet_DIR:PATH=$prefix/" "$out-cmake/CMakeCache.txt" ||
    fail "$name: find_package(unet) did not use $prefix: $(grep '^unet_DIR' "$out-cmake/CMakeCache.txt")"
  cmake --build "$out-cmake" >/dev/null

  # pkg-config: unet.pc as installed, its paths moved under ROOT by the sysroot; libibverbs.pc and
  # librdmacm.pc from the system. The rpath is for running without installing into /usr.
  local pcdir
  pcdir=$(dirname "$(find "$inst" -path '*/pkgconfig/unet.pc' | head -n1)")
  [ "$pcdir" != . ] || fail "$name: no unet.pc under $inst"
  local pc=(env PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$inst" pkg-config)
  [ "$("${pc[@]}" --modversion unet)" = "$version" ] || fail "$name: pkg-config --modversion unet"
  local libdir flags
  libdir=$("${pc[@]}" --variable=libdir unet)
  flags=$("${pc[@]}" --cflags --libs unet)
  mkdir -p "$out-pkgconfig"
  # shellcheck disable=SC2086  # pkg-config's output is a list of words
  g++ -O2 -Wall -Wextra -Werror -o "$out-pkgconfig/unet_consumer_pingpong" \
    "$consumer_src/pingpong.cc" $flags -Wl,-rpath,"$libdir"
  # shellcheck disable=SC2086
  g++ -O2 -Wall -Wextra -Werror -o "$out-pkgconfig/unet_consumer_boot" \
    "$consumer_src/boot_job.cc" $flags -Wl,-rpath,"$libdir"

  # Both binaries load unet from ROOT.
  local bin lib
  for bin in "$out-cmake/unet_consumer_pingpong" "$out-pkgconfig/unet_consumer_pingpong"; do
    lib=$(ldd "$bin" | awk '$1 ~ /^libunet_core\.so/ {print $3}')
    case $lib in
      "$inst"/*) ;;
      *) fail "$bin loads libunet_core from '${lib:-nowhere}', not from $inst" ;;
    esac
  done
  # unet::boot needs no device: both builds fork their 4 ranks and check the collectives here
  # (libunet_boot.so finds the layers below it in ROOT's libdir, not on its own rpath).
  for bin in "$out-cmake/unet_consumer_boot" "$out-pkgconfig/unet_consumer_boot"; do
    LD_LIBRARY_PATH="$libdir" "$bin" || fail "$bin exited $?"
  done
  echo "package.sh: consumer built against $inst with find_package and with pkg-config"
}

step "consumer against the installed tree"
build_consumer "$build/stage" stage

step "cpack: Debian packages"
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB -B "$build/packages" >/dev/null)
arch=$(dpkg --print-architecture)

# check_deb PACKAGE DEPENDS... — the file exists, dpkg-deb -I names it PACKAGE at $version, and
# its Depends has each given entry (an exact "name (= version)" or a bare package name).
check_deb() {
  local pkg=$1 deb="$build/packages/$1_${version}_${arch}.deb" info depends want
  shift
  [ -f "$deb" ] || fail "no $deb (cpack made: $(cd "$build/packages" && echo ./*.deb))"
  info=$(dpkg-deb -I "$deb")
  grep -qx " Package: $pkg" <<<"$info" || fail "$deb: Package is not $pkg"
  grep -qx " Version: $version" <<<"$info" || fail "$deb: Version is not $version"
  depends=$(sed -n 's/^ Depends: //p' <<<"$info")
  local entries
  entries=$(tr ',' '\n' <<<"$depends" | sed -E 's/^ +//; s/ +$//')
  for want in "$@"; do
    grep -qE "^$want( \(.*\))?\$" <<<"$entries" || fail "$pkg: Depends '$depends' lacks $want"
  done
  echo "package.sh: $pkg $version: Depends: $depends"
}
check_deb libunet1 libibverbs1 librdmacm1
dev_depends=("libunet1 \(= $version\)" libibverbs-dev librdmacm-dev)
if pkg-config --exists pmix; then dev_depends+=(libpmix-dev); fi  # UNET_PMIX=AUTO found it
check_deb libunet-dev "${dev_depends[@]}"
check_deb unet-utils "libunet1 \(= $version\)"
n_debs=$(find "$build/packages" -maxdepth 1 -name '*.deb' | wc -l)
[ "$n_debs" -eq 3 ] || fail "cpack made $n_debs packages, not 3"

# has PACKAGE PATH-REGEX — the package carries a file whose path matches.
declare -A contents
for pkg in libunet1 libunet-dev unet-utils; do
  contents[$pkg]=$(dpkg-deb -c "$build/packages/${pkg}_${version}_${arch}.deb" | awk '{print $6}')
done
has() { grep -qE "$2" <<<"${contents[$1]}" || fail "$1 carries no file matching $2"; }
for lib in verbs core uam ulp boot; do
  has libunet1 "/libunet_$lib\.so\.1$"
  has libunet-dev "/libunet_$lib\.so$"
  has libunet-dev "/include/unet/$lib/"
done
has libunet-dev '/cmake/unet/unetConfig\.cmake$'
has libunet-dev '/cmake/unet/unetConfigVersion\.cmake$'
has libunet-dev '/pkgconfig/unet\.pc$'
has unet-utils '^\./usr/bin/unet_perf$'
if grep -q include/ <<<"${contents[libunet1]}"; then fail "libunet1 carries headers"; fi

step "dpkg -x into $build/debroot"
rm -rf "$build/debroot"
for deb in "$build/packages"/*.deb; do dpkg -x "$deb" "$build/debroot"; done
# The tools find every library they need there (they carry no rpath: in /usr they need none).
libdir=$(dirname "$(find "$build/debroot" -name 'libunet_core.so.1' | head -n1)")
for tool in "$build"/debroot/usr/bin/*; do
  missing=$(LD_LIBRARY_PATH="$libdir" ldd "$tool" | grep 'not found' || true)
  [ -z "$missing" ] || fail "$tool: $missing"
done
build_consumer "$build/debroot" deb

echo "package.sh: ok: unet $version installs, packages (libunet1, libunet-dev, unet-utils) and builds a consumer both ways"
