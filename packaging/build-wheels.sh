#!/usr/bin/env bash
# Builds what braid-cni is distributed as (docs/packaging.md), into dist/ (what `make wheel` runs):
#
#   braid_cni-V-cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
#   braid_cni-V-cp311-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl
#   braid_cni-V.tar.gz   the sdist: the extension's and the shim's sources, built by pip
#
# Each wheel holds braid._native, linked by zig against glibc 2.17's symbols (maturin --zig
# --compatibility manylinux2014), and the shim staged in braid._native.data/scripts/ for its
# architecture: the static front `braid` and `braid-full` on x86-64, `braid-full` under both
# names on aarch64 (packaging/build-shim.sh). The staging directory is emptied before each
# wheel, so no wheel carries another architecture's shim.
#
#   packaging/build-wheels.sh [-o DIR] [--arch x86_64|aarch64]... [--no-sdist]
#
# Needs cargo, the rust-std of each target (rustup target add aarch64-unknown-linux-gnu), and
# for aarch64 Debian's cross compiler (gcc-aarch64-linux-gnu libc6-dev-arm64-cross; installed
# here when missing and run as root). maturin, zig and auditwheel come from PyPI, pinned in
# packaging/wheel-tools.txt, into target/wheel-tools/; cargo's outputs are kept in target/zig/,
# so a second build compiles only what changed.
#
# Beside them (docs/supply-chain.md): each wheel carries its CycloneDX SBOM in
# <dist-info>/sboms/braid-cni.cdx.json (packaging/sbom.py: the crates compiled into it with
# Cargo.lock's checksums, the Python dependencies it declares), also written as WHEEL.cdx.json,
# and braid_cni-V.intoto.json is the provenance of everything built (packaging/provenance.py).
# Two builds of one commit give the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
arches=()
sdist=1
while (($#)); do
  case $1 in
    -o) out=$2; shift 2 ;;
    --arch) arches+=("$2"); shift 2 ;;
    --no-sdist) sdist=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-wheels.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
((${#arches[@]})) || arches=(x86_64 aarch64)

tools=target/wheel-tools
if ! cmp -s packaging/wheel-tools.txt "$tools/requirements.txt" 2>/dev/null; then
  echo "build-wheels: tools into $tools (packaging/wheel-tools.txt)"
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
    -r packaging/wheel-tools.txt
  cp packaging/wheel-tools.txt "$tools/requirements.txt"
fi
maturin=$tools/bin/maturin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# maturin and cargo talk a lot: their output is shown when they fail.
quiet() { "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "build-wheels: FAILED: $*" >&2; exit 1; }; }
stage=braid._native.data/scripts
mkdir -p "$out"
# One build id for the shim and braid._native of every wheel (braid --version, doctor).
BRAID_BUILD=$(packaging/build-id.sh)
export BRAID_BUILD
built=()

for arch in "${arches[@]}"; do
  triple=$arch-unknown-linux-gnu
  shim=target/shim/$triple
  if [[ $arch == "$(uname -m)" ]]; then
    packaging/build-shim.sh
    shim=target/release
  else
    if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$triple"; then
      echo "build-wheels: rustup target add $triple"
      rustup target add "$triple" >/dev/null
    fi
    if ! command -v aarch64-linux-gnu-gcc >/dev/null && [[ $EUID -eq 0 ]]; then
      echo "build-wheels: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
    fi
    packaging/build-shim.sh --target "$triple"
  fi
  rm -rf "${stage%/*}"
  mkdir -p "$stage"
  install -m 0755 "$shim/braid" "$shim/braid-full" "$stage/"
  # PATH: maturin finds zig (python-zig) beside it.
  PATH=$PWD/$tools/bin:$PATH CARGO_TARGET_DIR=target/zig \
    quiet "$maturin" build --release --locked --zig --compatibility manylinux2014 \
    --target "$triple" --interpreter python3 -o "$out"
  # shellcheck disable=SC2012 # wheel names hold no blanks
  wheel=$(cd "$out" && ls -t braid_cni-*_"$arch".whl | head -n1)
  crates=(--crate braid-py --crate braid-shim)
  [[ $arch != x86_64 ]] || crates+=(--crate braid-front) # the front is x86-64 only
  quiet "$tools/bin/python" packaging/sbom.py wheel "$out/$wheel" --target "$triple" "${crates[@]}"
  built+=("$out/$wheel")
  echo "build-wheels: $wheel (SBOM: $wheel.cdx.json)"
done
rm -rf "${stage%/*}"
if ((sdist)); then
  # The project's build backend, as a frontend (pip, build) runs it (packaging/pep517/).
  PATH=$PWD/$tools/bin:$PATH quiet "$tools/bin/python" -c '
import sys
sys.path.insert(0, "packaging/pep517")
import braid_build
braid_build.build_sdist(sys.argv[1])' "$out"
  # shellcheck disable=SC2012 # sdist names hold no blanks
  sdist_name=$(cd "$out" && ls -t braid_cni-*.tar.gz | head -n1)
  built+=("$out/$sdist_name")
  echo "build-wheels: $sdist_name"
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
provenance=$out/braid_cni-$version.intoto.json
subjects=()
for f in "${built[@]}"; do subjects+=(--subject "$f"); done
quiet "$tools/bin/python" packaging/provenance.py --kind wheel --out "$provenance" "${subjects[@]}" \
  --input Cargo.lock --input packaging/wheel-tools.txt --input pyproject.toml \
  --param "architectures=${arches[*]}" --param "build=$BRAID_BUILD" \
  --tool "cargo=$(cargo --version)" --tool "rustc=$(rustc --version)" \
  --tool "maturin=$("$maturin" --version)" --tool "zig=$("$tools/bin/python" -m ziglang version)" \
  --tool "python=$("$tools/bin/python" --version)"
echo "build-wheels: $(basename "$provenance") (provenance of ${#built[@]} files)"
