#!/usr/bin/env bash
# Proves `pip install braid-cni` (docs/packaging.md): builds the abi3 wheel with the compiled
# `braid` shim staged in its scripts, installs it into a fresh virtualenv, then runs the shim's
# VERSION and imports braid._native from that environment. Exits non-zero on any failure.
#
#   packaging/check-wheel.sh            (what `make test-wheel` runs)
#   KEEP_WHEEL=dist packaging/check-wheel.sh   also copies the wheel into dist/
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
MATURIN=${MATURIN:-.venv/bin/maturin}
STAGE=target/wheel-data/scripts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "check-wheel: FAILED: $*" >&2; exit 1; }

# 1. The shim, staged where [tool.maturin] data points.
packaging/build-shim.sh
mkdir -p "$STAGE"
install -m 0755 target/release/braid "$STAGE/braid"
install -m 0755 target/release/braid-full "$STAGE/braid-full"

# 2. The wheel.
"$MATURIN" build --release --locked -q -o "$work/dist" >/dev/null
wheels=("$work"/dist/*.whl)
[[ ${#wheels[@]} -eq 1 ]] || fail "expected one wheel, got: ${wheels[*]}"
wheel=${wheels[0]}
name=$(basename "$wheel")
[[ $name == braid_cni-*-abi3-*.whl ]] || fail "not an abi3 wheel: $name"
listing=$("$PYTHON" -m zipfile -l "$wheel")
grep -Eq 'braid_cni-[^/]+\.data/scripts/braid ' <<<"$listing" || fail "no scripts/braid in $name"
grep -Eq 'braid_cni-[^/]+\.data/scripts/braid-full ' <<<"$listing" || fail "no scripts/braid-full in $name"
grep -Eq 'braid/_native\.abi3\.so ' <<<"$listing" || fail "no braid/_native.abi3.so in $name"

# 3. A fresh environment, installed the way users do it.
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"
shim="$work/venv/bin/braid"
[[ -x $shim ]] || fail "pip did not install an executable $shim"
file_kind=$(head -c 4 "$shim" | od -An -c | tr -d ' ')
[[ $file_kind == '177ELF' ]] || fail "$shim is not the compiled shim (a launcher script?)"

expected='{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'
answer=$(env -i CNI_COMMAND=VERSION "$shim" </dev/null)
[[ $answer == "$expected" ]] || fail "braid VERSION printed: $answer"
answer=$(env -i CNI_COMMAND=VERSION "$work/venv/bin/braid-full" </dev/null)
[[ $answer == "$expected" ]] || fail "braid-full VERSION printed: $answer"
# A call the front hands over (no daemon, no wait): braid-full, found beside it, answers.
answer=$(echo '{"cniVersion":"1.0.0","name":"n","type":"braid","daemonSocketDir":"'"$work"'","daemonWaitSeconds":0}' \
  | env -i CNI_COMMAND=CHECK CNI_CONTAINERID=c CNI_NETNS=/x CNI_IFNAME=eth0 CNI_PATH=/nowhere "$shim" || true)
[[ $answer == *'"code": 11'* && $answer == *'not reachable'* ]] || fail "braid CHECK without a daemon printed: $answer"

(cd "$work" && "$work/venv/bin/python" -c '
import braid._native as native
assert native.CNI_CURRENT_VERSION == "1.1.0", native.CNI_CURRENT_VERSION
assert native.__file__.startswith("'"$work"'/venv/"), native.__file__
') || fail "import braid._native from the fresh environment"

if [[ -n ${KEEP_WHEEL:-} ]]; then
  mkdir -p "$KEEP_WHEEL" && cp "$wheel" "$KEEP_WHEEL/"
fi
echo "check-wheel: $name installs braid and braid-full (VERSION ok, hand-over ok) and braid._native"
