#!/usr/bin/env bash
# Builds braid's shim, the two executables the runtime's CNI bin directory holds, and puts
# them at target/release/, where the Makefile, the tests and the wheel expect them:
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
# Each build passes its flags through RUSTFLAGS with an explicit --target so they apply to
# the shim only, never to build scripts or to the braid._native extension; the front builds
# in a target directory of its own (panic=abort and no relocation: flags no other crate of
# the workspace is built with).
#
#   packaging/build-shim.sh --clippy   runs clippy (-D warnings) on the front's binary with
#                                      those flags instead of building (what `make lint` runs)
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
front_flags="-C relocation-model=static -C target-feature=+crt-static -C panic=abort"
if [[ ${1:-} == --clippy ]]; then
  [[ "$host" == x86_64-*-linux-* ]] || exit 0 # no front on this architecture
  RUSTFLAGS="$front_flags" cargo clippy --locked -q -p braid-front --features bin --bins \
    --target "$host" --target-dir target/front -- -D warnings
  exit
fi
RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --release --locked -q -p braid-shim --target "$host"
mkdir -p target/release
install -m 0755 "target/$host/release/braid-full" target/release/braid-full.tmp
mv -f target/release/braid-full.tmp target/release/braid-full
front="target/$host/release/braid-full"
if [[ "$host" == x86_64-*-linux-* ]]; then
  RUSTFLAGS="$front_flags" \
    cargo build --release --locked -q -p braid-front --features bin --target "$host" \
    --target-dir target/front
  front="target/front/$host/release/braid"
fi
install -m 0755 "$front" target/release/braid.tmp
mv -f target/release/braid.tmp target/release/braid
