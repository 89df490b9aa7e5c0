#!/usr/bin/env bash
# Builds braid's shim, the two executables the runtime's CNI bin directory holds:
#
#   braid       the front (rust/braid-front): no C library, its own entry point, static and
#               not position-independent, so its start costs what the kernel's exec costs and
#               no more (glibc's start-up alone is 0.45 ms in a VM). It answers VERSION and
#               does the daemon round trip; everything else it hands to braid-full.
#   braid-full  the full shim (rust/braid-shim): static-pie with glibc linked in; waits for
#               the daemon, replays a DEL without it, reports every error.
#
# On an architecture the front is not written for (it is x86-64 only), braid-full is
# installed as braid too: the full shim does everything the front does.
#
# Both are static: they run on any Linux of their architecture whatever its C library (the
# shim is copied to the host's /opt/cni/bin), and an exec skips the dynamic loader.
#
# Each build passes its flags through RUSTFLAGS with an explicit --target so they apply to
# the shim only, never to build scripts or to the braid._native extension; the front builds
# in a target directory of its own (panic=abort and no relocation: flags no other crate of
# the workspace is built with).
#
#   packaging/build-shim.sh                  for this machine, into target/release/ (where the
#                                            Makefile, the tests and the image expect them)
#   packaging/build-shim.sh --target TRIPLE  for another architecture, into target/shim/TRIPLE/:
#                                            aarch64-unknown-linux-gnu, linked by Debian's
#                                            cross compiler (apt-get install
#                                            gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
#   CARGO_TARGET_DIR is honoured (cargo's own outputs go there; the two executables still go
#   to target/release/ or target/shim/TRIPLE/ of the source tree).
#
#   packaging/build-shim.sh --clippy         runs clippy (-D warnings) on the front's binary with
#                                            those flags instead of building (what `make lint` runs)
set -euo pipefail
cd "$(dirname "$0")/.."
# The build both executables report (`braid --version`, the VERSION answer's braidBuild).
BRAID_BUILD=$(bash packaging/build-id.sh) # bash: an sdist keeps no mode bits
export BRAID_BUILD
host=$(rustc -vV | sed -n 's/^host: //p')
cargo_dir=${CARGO_TARGET_DIR:-target}
front_flags="-C relocation-model=static -C target-feature=+crt-static -C panic=abort"
if [[ ${1:-} == --clippy ]]; then
  [[ "$host" == x86_64-*-linux-* ]] || exit 0 # no front on this architecture
  RUSTFLAGS="$front_flags" cargo clippy --locked -q -p braid-front --features bin --bins \
    --target "$host" --target-dir "$cargo_dir/front" -- -D warnings
  exit
fi
target=$host
out=target/release
if [[ ${1:-} == --target ]]; then
  target=${2:?--target needs a target triple}
  [[ $target == "$host" ]] || out=target/shim/$target
elif (($#)); then
  echo "build-shim.sh: unknown argument $1" >&2
  exit 2
fi
if [[ $target != "$host" ]]; then
  case $target in
    aarch64-unknown-linux-gnu) linker=aarch64-linux-gnu-gcc ;;
    *) echo "build-shim.sh: no cross linker known for $target" >&2; exit 2 ;;
  esac
  command -v "$linker" >/dev/null || {
    echo "build-shim.sh: $linker is missing (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)" >&2
    exit 1
  }
  var=$(tr 'a-z-' 'A-Z_' <<<"$target")
  export "CARGO_TARGET_${var}_LINKER=$linker"
fi
RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --release --locked -q -p braid-shim --target "$target"
mkdir -p "$out"
install -m 0755 "$cargo_dir/$target/release/braid-full" "$out/braid-full.tmp"
mv -f "$out/braid-full.tmp" "$out/braid-full"
front="$cargo_dir/$target/release/braid-full"
if [[ "$target" == x86_64-*-linux-* ]]; then
  RUSTFLAGS="$front_flags" \
    cargo build --release --locked -q -p braid-front --features bin --target "$target" \
    --target-dir "$cargo_dir/front"
  front="$cargo_dir/front/$target/release/braid"
fi
install -m 0755 "$front" "$out/braid.tmp"
mv -f "$out/braid.tmp" "$out/braid"
