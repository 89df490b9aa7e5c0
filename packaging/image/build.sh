#!/usr/bin/env bash
# Builds braid's node image from Debian's packages and the built wheel, without a registry or
# a container engine, as an OCI image layout archive (what `make image` runs):
#
#   base    Debian bookworm by mmdebstrap (the Essential set + packages.txt, trimmed by
#           trim-base.sh), apt pinned to the versions of packages-<arch>.lock; mmdebstrap's
#           customize hook (debian-lock.py) fails, naming the package, when a .deb has the
#           lock's version and other bytes, and, as BRAID_DEBIAN_LOCK says, when the mirror
#           no longer serves a locked version. Cached in .cache/image/base-<key>/ with its
#           layer, <key> being a hash of the recipe: the lock and its policy, the package list,
#           mmdebstrap's options and mirrors, trim-base.sh
#   wheels  the wheels of requirements.txt (pinned, with hashes) and pip.txt, downloaded once
#           into .cache/image/wheelhouse-<key>/ in pip's hash-checking mode
#   braid   a virtualenv at /opt/braid made by the image's own python3, with the wheel
#           (dist/braid_cni-*.whl) and its dependencies installed offline inside the root
#           filesystem, byte-compiled (unchecked-hash); the shim at /usr/local/bin/braid and
#           braid-full (target/release/)
#   archive two gzip layers (base, braid) and the config, written by oci.py: the same inputs
#           give the same bytes
#   attest  the image's CycloneDX SBOM (packaging/sbom.py), also in the image at
#           /usr/share/doc/braid/sbom.cdx.json, written beside the archive as OUTPUT.cdx.json;
#           the provenance (packaging/provenance.py) as OUTPUT.intoto.json
#           (docs/supply-chain.md)
#
# Needs root (mmdebstrap --mode=root, chroot). The first build downloads Debian's packages
# (about a minute); later ones reuse the base and take seconds.
#
#   packaging/image/build.sh [--name NAME] [--output FILE] [--work DIR]
#                            [--refresh-base] [--refresh-lock] [--cached-base-only]
#
#   --name NAME        the image's name (default $BRAID_IMAGE_NAME or docker.io/library/braid:dev)
#   --output FILE      the archive (default dist/braid-image.oci.tar)
#   --work DIR         scratch directory, emptied first (default target/image)
#   --refresh-base     build the base and the wheelhouse again
#   --refresh-lock     build the base from the mirror's current packages and write them to
#                      packages-<arch>.lock, with BRAID_DEBIAN_SNAPSHOT (default: the newest
#                      Date of the mirror's Release files) as the lock's snapshot
#   --cached-base-only fail instead of building a base that is not cached
#
# The archive is an OCI image layout in a tar file (`oci-archive`). braid publishes no image:
# put this one where the nodes get it (docs/operations.md, "Install"), and name it in the
# overlay you apply (deploy/overlays/prod, `images`):
#
#   skopeo copy oci-archive:dist/braid-image.oci.tar docker://REGISTRY/braid:TAG   (a registry)
#   ctr -n k8s.io images import dist/braid-image.oci.tar   (each node's containerd, as NAME)
#   podman load -i dist/braid-image.oci.tar                (each node's podman or CRI-O)
#
# Environment: SOURCE_DATE_EPOCH (default: the commit time of HEAD) is the time of the braid
# layer's files and of the image; a base built anew takes it too when it is set (otherwise
# the time of that build; BRAID_IMAGE_BASE_EPOCH overrides both: the provenance's baseEpoch
# rebuilds the base of an earlier build). BRAID_IMAGE_REVISION is the revision label
# (default: HEAD's commit). BRAID_WHEEL picks the wheel (default: the newest in dist/).
# BRAID_DEBIAN_MIRROR, BRAID_DEBIAN_SECURITY_MIRROR: Debian's archive and its security archive
# (default deb.debian.org; https://snapshot.debian.org/archive/debian/<snapshot>/ and
# .../debian-security/<snapshot>/ rebuild the lock's packages wherever the live mirror moved on).
# BRAID_DEBIAN_LOCK: `strict` installs exactly the lock's versions and bytes or fails naming
# the package (the default with a snapshot.debian.org mirror; release builds set it);
# `drift` (the default otherwise) takes the mirror's current version of a package whose
# locked version it no longer serves, warns with a line a package and records the drift in
# the SBOM (braid:lockDrift) and the provenance (lockDrift). Other bytes under a locked
# version fail either way.
# BRAID_IMAGE_CACHE: where the base and the wheelhouse are kept (default .cache/image).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=packaging/image

name=${BRAID_IMAGE_NAME:-docker.io/library/braid:dev}
output=dist/braid-image.oci.tar
work=target/image
refresh=0
relock=0
cached_only=0
while (($#)); do
  case $1 in
    --name) name=$2; shift 2 ;;
    --name=*) name=${1#*=}; shift ;;
    --output) output=$2; shift 2 ;;
    --output=*) output=${1#*=}; shift ;;
    --work) work=$2; shift 2 ;;
    --work=*) work=${1#*=}; shift ;;
    --refresh-base) refresh=1; shift ;;
    --refresh-lock) refresh=1; relock=1; shift ;;
    --cached-base-only) cached_only=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

cache=${BRAID_IMAGE_CACHE:-.cache/image}
suite=bookworm
mirror=${BRAID_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${BRAID_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
if [[ $mirror$security_mirror == *snapshot.debian.org* ]]; then
  policy=${BRAID_DEBIAN_LOCK:-strict}
else
  policy=${BRAID_DEBIAN_LOCK:-drift}
fi
python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
started=$SECONDS
n=0

die() { echo "image: FAILED: $*" >&2; exit 1; }
step() { n=$((n + 1)); printf 'image: [%d/6 %3ds] %s\n' "$n" $((SECONDS - started)) "$*"; }
sha() { sha256sum | cut -c1-16; }
# A command inside the root filesystem, with nothing of this machine's environment.
in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 chroot "$work/rootfs" "$@"
}

[[ $EUID -eq 0 ]] || die "needs root (mmdebstrap --mode=root, chroot)"
[[ $policy == strict || $policy == drift ]] ||
  die "BRAID_DEBIAN_LOCK=$policy: strict or drift (docs/supply-chain.md)"
arch=$(dpkg --print-architecture)

# --- 1. inputs -------------------------------------------------------------------------------
step "inputs: the wheel, the shim, the time"
if [[ -n ${BRAID_WHEEL:-} ]]; then
  wheel=$BRAID_WHEEL
else
  # shellcheck disable=SC2012 # wheel names hold no blanks
  wheel=$(ls -t dist/braid_cni-*-abi3-*_"$(uname -m)".whl 2>/dev/null | head -n1 || true)
fi
[[ -n $wheel && -f $wheel ]] || die "no wheel in dist/ (make wheel)"
for f in braid braid-full; do
  [[ -x target/release/$f ]] || die "target/release/$f is missing (make shim)"
done
version=$(basename "$wheel" | cut -d- -f2)
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null) ||
    die "not a git checkout: set SOURCE_DATE_EPOCH"
  base_epoch_default=
else
  base_epoch_default=$SOURCE_DATE_EPOCH
fi
base_epoch_default=${BRAID_IMAGE_BASE_EPOCH:-$base_epoch_default}
export SOURCE_DATE_EPOCH # the SBOM's and the provenance's time
revision=${BRAID_IMAGE_REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
echo "       $wheel (braid $version), target/release/braid{,-full}, time $SOURCE_DATE_EPOCH"

# --- 2. the Debian base ----------------------------------------------------------------------
lock=$here/packages-$arch.lock
locked() { "$python" "$here/debian-lock.py" "$@"; }
if ((relock)); then
  snapshot=${BRAID_DEBIAN_SNAPSHOT:-auto} # auto: the Date of the mirror's Release files
  packages=$(sed -e 's/#.*//' "$here/packages.txt" | xargs | tr ' ' ,)
else
  [[ -f $lock ]] || die "no $lock: build.sh --refresh-lock writes it (docs/supply-chain.md)"
  snapshot=$(locked snapshot "$lock")
  packages=$(sed -e 's/#.*//' "$here/packages.txt" | xargs | tr ' ' ,)
fi
mm_args=(
  --variant=essential
  # apt's downloads kept until the customize hook has checked them against the lock
  --skip=essential/unlink
  # merged /usr by symlinks, as debootstrap does, without the usrmerge package (and Perl)
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --include="$packages"
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/share/bug/*'
)
if [[ $mirror$security_mirror == *snapshot.debian.org* ]]; then
  # A snapshot's Release files are past their Valid-Until: apt refuses them otherwise.
  mm_args+=(--aptopt='Acquire::Check-Valid-Until "false"')
fi
mirrors=(
  "deb $mirror $suite main"
  "deb $mirror $suite-updates main"
  "deb $security_mirror $suite-security main"
)
recipe_key() {
  {
    echo "$suite $arch $policy"
    printf '%s\n' "${mm_args[@]}" "${mirrors[@]}"
    cat "$here/trim-base.sh" "$here/debian-lock.py" "$lock"
  } | sha
}
if ((relock)); then base=$cache/base-relock; else base=$cache/base-$(recipe_key); fi
if ((refresh)); then
  rm -rf --one-file-system "$base"
fi
if [[ -f $base/done ]]; then
  step "base: cached ($base, $(wc -l <"$base/packages.txt") packages, BRAID_DEBIAN_LOCK=$policy)"
else
  ((cached_only == 0)) || die "no cached base at $base for BRAID_DEBIAN_LOCK=$policy (make image)"
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (apt-get install mmdebstrap)"
  step "base: mmdebstrap $suite --variant=essential + $packages," \
    "BRAID_DEBIAN_LOCK=$policy (about a minute)"
  mkdir -p "$cache"
  rm -rf --one-file-system "$base.partial"
  mkdir -p "$base.partial"
  base_epoch=${base_epoch_default:-$(date +%s)}
  hook_python=$(realpath "$(command -v "$python")") # the hook runs with no virtualenv
  pins=/etc/apt/preferences.d/braid-lock
  partial=$(realpath "$base.partial") # the hooks run elsewhere; BRAID_IMAGE_CACHE may be relative
  if ((relock)); then
    setup=()
    hook="$hook_python $PWD/$here/debian-lock.py write $partial/packages.lock \"\$1\" --snapshot $snapshot"
  else
    # The lock's versions, by apt's pins, the Essential set's too: a version the mirror no
    # longer serves is no error to apt (it takes its candidate), but to the check if strict.
    locked preferences "$lock" >"$base.partial/preferences"
    setup=(--setup-hook="cp $partial/preferences \"\$1$pins\"")
    hook="$hook_python $PWD/$here/debian-lock.py check $PWD/$lock \"\$1\" --policy $policy --record $partial"
  fi
  if ! SOURCE_DATE_EPOCH=$base_epoch mmdebstrap --mode=root "${mm_args[@]}" "${setup[@]}" \
    --customize-hook="$hook" --customize-hook="rm -f \"\$1$pins\"" \
    "$suite" "$base.partial/rootfs" "${mirrors[@]}" >"$base.partial/mmdebstrap.log" 2>&1; then
    grep '^debian-lock: warning' "$base.partial/mmdebstrap.log" >&2 || true
    tail -n 30 "$base.partial/mmdebstrap.log" >&2
    die "mmdebstrap failed (log: $base.partial/mmdebstrap.log)"
  fi
  "$here/trim-base.sh" "$base.partial/rootfs"
  echo "$base_epoch" >"$base.partial/epoch"
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
  chroot "$base.partial/rootfs" dpkg-query -W -f '${Package} ${Version}\n' \
    >"$base.partial/packages.txt"
  echo "       base layer (gzip)"
  "$python" "$here/oci.py" layer "$base.partial/rootfs" "$base.partial/layer.tar.gz" \
    --mtime "$base_epoch" --clamp --exclude 'dev/*' --exclude 'proc/*' --exclude 'sys/*' \
    >"$base.partial/layer.json"
  if ((relock)); then
    mv "$base.partial/packages.lock" "$lock"
    cp "$lock" "$base.partial/installed.lock"
    : >"$base.partial/drift.txt"
    touch "$base.partial/done"
    snapshot=$(locked snapshot "$lock")
    echo "       wrote $lock (snapshot $snapshot)"
    relocked=$cache/base-$(recipe_key) # where a build from this lock finds it
    rm -rf --one-file-system "$relocked"
    mv "$base.partial" "$relocked"
    base=$relocked
  else
    touch "$base.partial/done"
    mv "$base.partial" "$base"
  fi
  # One base is kept: the others were built from an older recipe.
  for old in "$cache"/base-*; do
    [[ $old == "$base" ]] || rm -rf --one-file-system "$old"
  done
fi
base_epoch=$(cat "$base/epoch")
# The packages the mirror served at another version than the lock's (BRAID_DEBIAN_LOCK=drift).
drift=$(awk '{ printf "%s%s %s -> %s", (NR > 1 ? ", " : ""), $1, $2, $3 }' "$base/drift.txt")
while read -r pkg from to; do
  echo "image: warning: $pkg drifted from $(basename "$lock"): $from -> $to" \
    "(BRAID_DEBIAN_LOCK=$policy)" >&2
done <"$base/drift.txt"

# --- 3. the wheelhouse -----------------------------------------------------------------------
wheels_key=$({ cat "$here/requirements.txt" "$here/pip.txt"; echo "$arch"; } | sha)
wheelhouse=$cache/wheelhouse-$wheels_key
((refresh == 0)) || rm -rf "$wheelhouse"
if [[ -f $wheelhouse/done ]]; then
  step "wheels: cached ($wheelhouse)"
else
  ((cached_only == 0)) || die "no cached wheelhouse at $wheelhouse (make image)"
  step "wheels: pip download $(grep -c '==' "$here/requirements.txt") pinned + pip, hashes checked"
  rm -rf "$wheelhouse.partial"
  # Wheels only, for this machine's CPython 3.11 and glibc: Debian bookworm's, the image's.
  "$python" -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps \
    --require-hashes -d "$wheelhouse.partial" -r "$here/requirements.txt" -r "$here/pip.txt"
  touch "$wheelhouse.partial/done"
  rm -rf "$wheelhouse"
  mv "$wheelhouse.partial" "$wheelhouse"
  for old in "$cache"/wheelhouse-*; do
    [[ $old == "$wheelhouse" ]] || rm -rf "$old"
  done
fi

# --- 4. braid inside the root filesystem -----------------------------------------------------
step "braid: venv /opt/braid, pip install --no-index (offline), compileall, the shim"
rm -rf --one-file-system "$work"
mkdir -p "$work"
cp -a "$base/rootfs" "$work/rootfs"
install_dir=$work/rootfs/tmp/braid-install
mkdir -p "$install_dir"
cp "$wheelhouse"/*.whl "$here/requirements.txt" "$install_dir/"
cp "$wheel" "$install_dir/"
# The wheel too is installed in hash-checking mode: these are the bytes the SBOM names.
echo "/tmp/braid-install/$(basename "$wheel") --hash=sha256:$(sha256sum <"$wheel" | cut -d' ' -f1)" \
  >"$install_dir/braid.txt"
pip_wheel=$(cd "$install_dir" && ls pip-*.whl)
in_root /usr/bin/python3 -m venv --without-pip /opt/braid
in_root /opt/braid/bin/python "/tmp/braid-install/$pip_wheel/pip" install -q \
  --no-index --find-links /tmp/braid-install --no-cache-dir --no-compile \
  --disable-pip-version-check --no-warn-script-location --require-hashes \
  -r /tmp/braid-install/requirements.txt -r /tmp/braid-install/braid.txt
in_root /opt/braid/bin/python -m compileall -q --invalidation-mode unchecked-hash \
  /opt/braid/lib >/dev/null
rm -f "$install_dir/$pip_wheel" # the installer, not installed
sbom_in_image=usr/share/doc/braid/sbom.cdx.json
"$python" packaging/sbom.py image --root "$work/rootfs" \
  --site "$work/rootfs/opt/braid/lib/python3.11/site-packages" --wheels "$install_dir" \
  --lock "$base/installed.lock" --drift "$base/drift.txt" \
  --version "$version" --out "$work/top/$sbom_in_image" \
  --file "/usr/local/bin/braid=target/release/braid" \
  --file "/usr/local/bin/braid-full=target/release/braid-full"
rm -rf "$install_dir"
mkdir -p "$work/top/opt" "$work/top/usr/local/bin"
mv "$work/rootfs/opt/braid" "$work/top/opt/braid"
for f in braid braid-full; do
  install -m 0755 "target/release/$f" "$work/top/usr/local/bin/$f"
  # The wheel brings the same shim into /opt/braid/bin: one file, two names.
  in_venv=$work/top/opt/braid/bin/$f
  if [[ -e $in_venv ]]; then
    cmp -s "$in_venv" "$work/top/usr/local/bin/$f" ||
      die "the wheel's $f differs from target/release/$f (make wheel)"
    ln -f "$work/top/usr/local/bin/$f" "$in_venv"
  fi
done

# --- 5. the braid layer ----------------------------------------------------------------------
step "layer: /opt/braid and /usr/local/bin (gzip)"
"$python" "$here/oci.py" layer "$work/top" "$work/braid-layer.tar.gz" \
  --mtime "$SOURCE_DATE_EPOCH" >"$work/braid-layer.json"

# --- 6. the archive --------------------------------------------------------------------------
step "archive: $output as $name"
mkdir -p "$(dirname "$output")"
digest=$(
  "$python" "$here/oci.py" image "$output" --name "$name" --created "$SOURCE_DATE_EPOCH" \
    --layer "$base/layer.tar.gz" --layer-created "$base_epoch" \
    --layer-by "Debian $suite (mmdebstrap --variant=essential): ${packages//,/ }" \
    --layer "$work/braid-layer.tar.gz" --layer-created "$SOURCE_DATE_EPOCH" \
    --layer-by "braid $version: /opt/braid (virtualenv), /usr/local/bin/braid, braid-full, /$sbom_in_image" \
    --env PATH=/opt/braid/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 \
    --cmd-json '["braidctl","daemon","--config=/etc/braid/braid.conf"]' \
    --label org.opencontainers.image.title=braid \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.revision="$revision" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label org.opencontainers.image.base.name="debian:$suite"
)
rm -rf --one-file-system "$work/rootfs"

# --- 7. the SBOM and the provenance, beside the archive --------------------------------------
cp "$work/top/$sbom_in_image" "$output.cdx.json"
"$python" packaging/provenance.py --kind image --out "$output.intoto.json" \
  --subject "$output" --subject-digest "$name=$digest" \
  --input Cargo.lock --input "$here/requirements.txt" --input "$here/pip.txt" --input "$lock" \
  --input "$here/packages.txt" --input "$wheel" \
  --uri "https://snapshot.debian.org/archive/debian/$snapshot/" \
  --uri "https://snapshot.debian.org/archive/debian-security/$snapshot/" \
  --param "name=$name" --param "revision=$revision" --param "debianSnapshot=$snapshot" \
  --param "baseEpoch=$base_epoch" --param "debianLock=$policy" --param "lockDrift=$drift" \
  --param "debianMirror=$mirror" --param "debianSecurityMirror=$security_mirror" \
  --tool "mmdebstrap=$(mmdebstrap --version 2>/dev/null || echo none)" \
  --tool "dpkg=$(dpkg-query -W -f '${Version}' dpkg)" \
  --tool "python=$("$python" --version)" --tool "pip=$(cd "$wheelhouse" && ls pip-*.whl)"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
layer_size() { "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
base_u=$(layer_size "$base/layer.json" uncompressed_size)
base_c=$(layer_size "$base/layer.json" size)
top_u=$(layer_size "$work/braid-layer.json" uncompressed_size)
top_c=$(layer_size "$work/braid-layer.json" size)
printf 'image: %s  %s in %ds\n' "$output" "$digest" $((SECONDS - started))
printf '       SBOM %s, provenance %s\n' "$output.cdx.json" "$output.intoto.json"
printf '       layers: Debian %s (%s gzip), braid %s (%s gzip); archive %s\n' \
  "$(mib "$base_u")" "$(mib "$base_c")" "$(mib "$top_u")" "$(mib "$top_c")" \
  "$(mib "$(stat -c %s "$output")")"
