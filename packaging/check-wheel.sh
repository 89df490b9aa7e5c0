#!/usr/bin/env bash
# Proves what a distributor gets (docs/packaging.md), as `make test-wheel` and CI run it:
#
#   build    packaging/build-wheels.sh: the x86-64 and aarch64 manylinux2014 wheels and the sdist
#   wheels   each: its tags (cp311-abi3, manylinux_2_17), `auditwheel show`, the files
#            (braid._native, scripts/braid and braid-full), the ELF machine of all three, the
#            shim static (no shared library needed) and the extension's glibc symbol versions
#            at most 2.17; its METADATA (and the sdist's PKG-INFO): no dev extra, Project-URLs,
#            docs/pypi.md as the long description
#   CPython  the x86-64 wheel installed by pip into a fresh virtualenv of every CPython here that
#            the package supports (requires-python >= 3.11: the system's python3 and pyenv's),
#            then from each: `braid` and `braid-full` VERSION, a CHECK `braid` hands over to
#            `braid-full`, `braid-thin --version`, `braidctl --version`, import braid._native;
#            pip must refuse the wheel on CPython 3.9 and 3.10, where they are
#   aarch64  under qemu-user (qemu-aarch64-static): the wheel's `braid` VERSION and hand-over,
#            and `import braid._native` by Debian's aarch64 CPython 3.11 (its packages
#            unpacked into target/arm64-python/, nothing installed)
#   sdist    `pip install braid_cni-*.tar.gz` into a fresh virtualenv: pip builds the extension
#            and the shim from the sources; the same checks
#   maturin  a plain `maturin build` (nothing staged) builds a wheel: the extension, no shim
#   supply   each wheel's SBOM (packaging/check-wheel-sbom.py: Cargo.lock's crates and
#            checksums, the Requires-Dist, listed in RECORD), the provenance's subjects, and
#            this machine's wheel built twice: byte-identical (docs/supply-chain.md)
#
#   packaging/check-wheel.sh
#   KEEP_WHEEL=dist packaging/check-wheel.sh   also copies the wheels and the sdist into dist/
#
# Cargo's outputs are kept under target/ (zig/, sdist/): a second run compiles braid's crates
# again for the sdist but no third-party crate. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-wheel: FAILED: $*" >&2; exit 1; }
say() { printf "check-wheel: [%3ds] %s\n" $((SECONDS - started)) "$*"; }
started=$SECONDS
# One build id for both builds of the reproducibility check.
BRAID_BUILD=$(packaging/build-id.sh)
export BRAID_BUILD

# --- build -----------------------------------------------------------------------------------
[[ $EUID -ne 0 ]] || command -v qemu-aarch64-static >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
# This machine's wheel is built twice, right before the others (a short window for a source
# edited between the builds); the two are compared below. The second build finds cargo's
# outputs fresh: maturin only packs again.
packaging/build-wheels.sh -o "$work/again" --arch "$(uname -m)" --no-sdist >/dev/null
packaging/build-wheels.sh -o "$work/dist"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
sdist=$work/dist/braid_cni-$version.tar.gz
[[ -f $sdist ]] || fail "no sdist $(basename "$sdist")"
say "built: $(cd "$work/dist" && echo *)"
tar -xzf "$sdist" -C "$work" "braid_cni-$version/PKG-INFO" || fail "no PKG-INFO in $(basename "$sdist")"

elf_machine() { od -An -tu2 -j18 -N2 "$1" | tr -d ' '; } # e_machine: 62 x86-64, 183 aarch64
glibc_max() { readelf -W -V "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1; }

# --- the wheels ------------------------------------------------------------------------------
check_wheel() { # arch machine
  local arch=$1 machine=$2 wheel dir f
  wheel=$work/dist/braid_cni-$version-cp311-abi3-manylinux2014_$arch.manylinux_2_17_$arch.whl
  [[ -f $wheel ]] || fail "no manylinux2014 $arch wheel in: $(ls "$work/dist")"
  dir=$work/$arch
  # Unpacked with each file's mode, as pip installs it: the shim must be executable.
  "$PY" - "$wheel" "$dir" <<'UNZIP' || fail "unpacking $(basename "$wheel")"
import sys, zipfile
from pathlib import Path
with zipfile.ZipFile(sys.argv[1]) as whl:
    for info in whl.infolist():
        whl.extract(info, sys.argv[2])
        Path(sys.argv[2], info.filename).chmod((info.external_attr >> 16) & 0o777 or 0o644)
UNZIP
  for f in braid/_native.abi3.so "braid_cni-$version.data/scripts/braid" \
    "braid_cni-$version.data/scripts/braid-full"; do
    [[ -f $dir/$f ]] || fail "no $f in $(basename "$wheel")"
    [[ $f == *.so || -x $dir/$f ]] || fail "$f in $(basename "$wheel") is not executable"
    [[ $(elf_machine "$dir/$f") == "$machine" ]] || fail "$f in the $arch wheel is for machine $(elf_machine "$dir/$f")"
  done
  for f in braid braid-full; do
    f=$dir/braid_cni-$version.data/scripts/$f
    ! readelf -W -d "$f" | grep -q NEEDED || fail "$(basename "$f") ($arch) needs shared libraries"
  done
  [[ $(printf '%s\n' "$(glibc_max "$dir/braid/_native.abi3.so")" 2.17 | sort -V | tail -n1) == 2.17 ]] ||
    fail "braid._native ($arch) needs glibc $(glibc_max "$dir/braid/_native.abi3.so")"
  local report
  report=$("$tools/bin/auditwheel" show "$wheel" 2>&1) || fail "auditwheel show: $report"
  grep -q "\"manylinux_2_17_$arch\"" <<<"$report" || fail "auditwheel show: $report"
  ! grep -q 'ignoring' <<<"$report" || fail "auditwheel show: $report"
  check_metadata "$dir/braid_cni-$version.dist-info/METADATA" "$(basename "$wheel")"
  "$PY" packaging/check-wheel-sbom.py "$wheel" "$arch" || fail "the SBOM of $(basename "$wheel")"
  say "$(basename "$wheel"): auditwheel manylinux_2_17_$arch, the shim static, braid._native glibc <= 2.17"
}
# What a package index shows (tests/unit/test_package_metadata.py checks the same before a
# build): no development extra, the project's URLs, and docs/pypi.md as the long description.
check_metadata() { # METADATA or PKG-INFO, what it came from
  "$PY" - "$1" docs/pypi.md <<'METADATA' || fail "the metadata of $2"
import email.parser, sys
from pathlib import Path
meta = email.parser.BytesParser().parsebytes(Path(sys.argv[1]).read_bytes())
assert "dev" not in (meta.get_all("Provides-Extra") or []), "a dev extra is published"
urls = [u.split(", ", 1)[1] for u in meta.get_all("Project-URL") or []]
assert urls and all(u.startswith("https://github.com/braid-cni/braid") for u in urls), urls
assert meta.get_payload().strip() == Path(sys.argv[2]).read_text().strip(), "not docs/pypi.md"
METADATA
}
PY=python3
tools=target/wheel-tools
check_wheel x86_64 62
check_wheel aarch64 183
check_metadata "$work/braid_cni-$version/PKG-INFO" "$(basename "$sdist")"
say "metadata of the wheels and the sdist: no dev extra, Project-URLs, docs/pypi.md"
"$PY" packaging/check-wheel-sbom.py --provenance "$work/dist/braid_cni-$version.intoto.json" \
  "$work"/dist/braid_cni-*.whl "$sdist" || fail "the provenance of the wheels and the sdist"
say "SBOMs: Cargo.lock's crates and checksums, Requires-Dist; provenance: the files' SHA-256"

# --- reproducible ----------------------------------------------------------------------------
# This machine's wheel, built twice (above): the same bytes, SBOM included. (The other
# architecture's is packed the same way; building it twice would only repeat that.)
again=$(cd "$work/again" && echo braid_cni-*.whl)
for f in "$again" "$again.cdx.json"; do
  cmp -s "$work/dist/$f" "$work/again/$f" && continue
  "$PY" - "$work/dist/$again" "$work/again/$again" <<'DIFFER' >&2 || true
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:])
names = sorted({i.filename for i in a.infolist()} | {i.filename for i in b.infolist()})
for name in names:
    if name not in a.namelist() or name not in b.namelist() or a.read(name) != b.read(name):
        print("  differs:", name)
DIFFER
  fail "$f built again differs: not reproducible (a source edited between the builds?)"
done
say "$again built again: the same bytes, and the same SBOM"


# --- running it ------------------------------------------------------------------------------
# $1: a bin/ directory holding braid, braid-full, braid-thin, braidctl; $2: how to run an ELF
check_shim() {
  local bin=$1 run=${2:-} answer
  for f in braid braid-full; do
    [[ $(head -c 4 "$bin/$f" | od -An -c | tr -d ' ') == '177ELF' ]] || fail "$bin/$f is not the compiled shim"
    answer=$(env -i CNI_COMMAND=VERSION ${run:+"$run"} "$bin/$f" </dev/null) || fail "$bin/$f VERSION failed: $answer"
    "$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
assert v["cniVersion"] == "1.1.0", v
assert v["supportedVersions"] == ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"], v
' "$answer" || fail "$bin/$f VERSION printed: $answer"
  done
  # A call the front hands over (no daemon, no wait): braid-full, found beside it, answers.
  answer=$(echo '{"cniVersion":"1.0.0","name":"n","type":"braid","daemonSocketDir":"'"$work"'","daemonWaitSeconds":0}' |
    env -i CNI_COMMAND=CHECK CNI_CONTAINERID=c CNI_NETNS=/x CNI_IFNAME=eth0 CNI_PATH=/nowhere ${run:+"$run"} "$bin/braid" || true)
  [[ $answer == *'"code": 11'* && $answer == *'not reachable'* ]] || fail "$bin/braid CHECK without a daemon printed: $answer"
}
check_env() { # a virtualenv braid-cni was installed into
  local venv=$1 out
  check_shim "$venv/bin"
  out=$("$venv/bin/braid-thin" --version) && [[ $out == "braid-thin $version" ]] || fail "braid-thin --version: $out"
  out=$("$venv/bin/braidctl" --version) && [[ $out == "braidctl $version" ]] || fail "braidctl --version: $out"
  (cd "$work" && "$venv/bin/python" -c '
import sys
import braid._native as native
assert native.cni.CNI_CURRENT_VERSION == "1.1.0", native.cni.CNI_CURRENT_VERSION
from braid._native.record import decode_record  # a submodule, as the code imports it
assert callable(decode_record)
assert native.__file__.startswith(sys.prefix + "/"), native.__file__
') || fail "import braid._native in $venv"
}
# A virtualenv without pip of its own (ensurepip costs seconds a venv): the tools' pip installs
# into it, run by the virtualenv's interpreter (pip --python).
pip_into() { # venv, pip install arguments
  "$tools/bin/python" -m pip --python "$1/bin/python" install -q --disable-pip-version-check "${@:2}"
}
pip_install() { # python, venv, pip install arguments
  "$1" -m venv --without-pip "$2" && pip_into "$2" "${@:3}"
}

pythons=(/usr/bin/python3)
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
for p in "$pyenv_root"/versions/3.*/bin/python3; do [[ -x $p ]] && pythons+=("$p"); done
x86_wheel=$work/dist/braid_cni-$version-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
tested=()
for p in "${pythons[@]}"; do
  [[ -x $p ]] || continue
  pv=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$work/venv-$pv-$RANDOM
  if [[ $(printf '%s\n' "$pv" 3.11 | sort -V | head -n1) != 3.11 ]]; then
    [[ $(printf '%s\n' "$pv" 3.9 | sort -V | head -n1) == 3.9 ]] || continue
    # requires-python >= 3.11: pip must refuse the wheel.
    # (cp311-abi3: pip finds the wheel's tags unsupported before it reads requires-python.)
    if "$p" -m venv --without-pip "$venv" 2>/dev/null; then
      out=$(pip_into "$venv" --no-deps "$x86_wheel" 2>&1) &&
        fail "pip installed the wheel into CPython $pv (requires-python >= 3.11)"
      [[ $out == *'is not a supported wheel on this platform'* ]] ||
        fail "pip on CPython $pv refused the wheel for another reason: $out"
      tested+=("$pv(refused)")
    fi
    continue
  fi
  pip_install "$p" "$venv" "$x86_wheel" || fail "pip install into CPython $pv ($p)"
  check_env "$venv"
  tested+=("$pv")
  sdist_python=${sdist_python:-$p}
done
[[ -n ${sdist_python:-} ]] || fail "no CPython >= 3.11 to install into"
say "x86-64 wheel installed and run on CPython ${tested[*]}"

qemu=$(command -v qemu-aarch64-static || true)
[[ -n $qemu ]] || fail "qemu-aarch64-static is missing (apt-get install qemu-user-static)"
check_shim "$work/aarch64/braid_cni-$version.data/scripts" "$qemu"
# The aarch64 extension, imported by Debian's aarch64 CPython 3.11 under qemu-user: its packages
# downloaded by apt (a state of its own, arm64 only; nothing is installed) and unpacked into a
# root of their own, kept in target/arm64-python/.
arm_root=$PWD/target/arm64-python
if [[ ! -x $arm_root/root/usr/bin/python3.11 ]]; then
  rm -rf "$arm_root"
  mkdir -p "$arm_root"/{lists/partial,cache/archives/partial,debs,root}
  apt_arm=(-qq -o Dir::State::Lists="$arm_root/lists" -o Dir::Cache="$arm_root/cache"
    -o Dir::State::status=/dev/null -o APT::Architecture=arm64 -o APT::Architectures::=arm64
    -o APT::Sandbox::User=root)
  apt-get "${apt_arm[@]}" update >/dev/null || fail "apt-get update (arm64 lists)"
  (cd "$arm_root/debs" && apt-get "${apt_arm[@]}" download \
    python3.11-minimal libpython3.11-minimal libc6 libexpat1 zlib1g >/dev/null) ||
    fail "apt-get download (Debian's arm64 python3.11-minimal)"
  for deb in "$arm_root"/debs/*.deb; do dpkg-deb -x "$deb" "$arm_root/root"; done
fi
answer=$(cd "$work" && env -i "$qemu" -L "$arm_root/root" "$arm_root/root/usr/bin/python3.11" -I -c '
import platform, sys
sys.path.insert(0, sys.argv[1])
import braid._native as native
assert platform.machine() == "aarch64", platform.machine()
assert native.cni.CNI_CURRENT_VERSION == "1.1.0", native.cni.CNI_CURRENT_VERSION
assert native.__file__ == sys.argv[1] + "/braid/_native.abi3.so", native.__file__
print("ok")' "$work/aarch64" 2>&1) && [[ $answer == ok ]] || fail "import braid._native (aarch64) under qemu: $answer"
say "aarch64 wheel: braid (braid-full) VERSION and CHECK, import braid._native (CPython 3.11) under $(basename "$qemu")"

# Cargo's outputs in target/sdist/ (an absolute path: pip builds in a directory of its own),
# for the third-party crates alone: every file of an sdist has the same old time, so cargo
# would take braid's crates of an earlier run for fresh. Their fingerprints go first.
find target/sdist -path '*/.fingerprint/braid-*' -prune -exec rm -rf {} + 2>/dev/null || true
CARGO_TARGET_DIR=$PWD/target/sdist pip_install "$sdist_python" "$work/venv-sdist" "$sdist" ||
  fail "pip install $(basename "$sdist") (a build from source)"
check_env "$work/venv-sdist"
say "$(basename "$sdist"): pip built and installed the extension and the shim"

[[ ! -e braid._native.data ]] || fail "braid._native.data/ is staged: a plain maturin build would take it"
.venv/bin/maturin build --release --locked --quiet -o "$work/plain" >/dev/null 2>&1 ||
  fail "maturin build (plain)"
listing=$("$PY" -m zipfile -l "$work"/plain/braid_cni-*.whl)
grep -q 'braid/_native\.abi3\.so ' <<<"$listing" || fail "no braid/_native.abi3.so from a plain maturin build"
! grep -q '\.data/scripts/' <<<"$listing" || fail "a plain maturin build took a shim"
say "plain maturin build: $(basename "$work"/plain/*.whl) (the extension, no shim)"

if [[ -n ${KEEP_WHEEL:-} ]]; then
  mkdir -p "$KEEP_WHEEL" && cp "$work"/dist/* "$KEEP_WHEEL/"
fi
say "passed"
