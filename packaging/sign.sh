#!/usr/bin/env bash
# Signs braid's release files with the release key, and verifies them, with OpenSSH alone:
# detached SSH signatures (`ssh-keygen -Y sign`, OpenSSH 8.1 or later), one FILE.sig beside
# each FILE, in the namespace `braid-release` (docs/supply-chain.md, "Signatures").
#
#   packaging/sign.sh sign KEY [FILE...]
#       KEY: the release key's private half (an ed25519 key: ssh-keygen -t ed25519); it may
#       also be a public key whose private half ssh-agent holds. Without FILEs: every wheel,
#       sdist, image archive, SBOM and provenance in dist/.
#   packaging/sign.sh verify ALLOWED_SIGNERS [FILE...]
#       ALLOWED_SIGNERS: the release key as ssh-keygen's allowed-signers file, one line:
#         release@braid-cni namespaces="braid-release" ssh-ed25519 AAAA...
#       Exits non-zero, naming the file, unless every FILE.sig is a good signature of FILE by
#       that key. What it runs for each file, which an operator can run by hand:
#         ssh-keygen -Y verify -f ALLOWED_SIGNERS -I release@braid-cni -n braid-release \
#           -s FILE.sig <FILE
#
# BRAID_SIGNER is the principal looked up in ALLOWED_SIGNERS (default release@braid-cni).
set -euo pipefail

namespace=braid-release
signer=${BRAID_SIGNER:-release@braid-cni}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
(($# >= 2)) || { usage >&2; exit 2; }
mode=$1 key=$2
shift 2
files=("$@")
if ((${#files[@]} == 0)); then
  shopt -s nullglob
  dist=$(dirname "$0")/../dist
  files=("$dist"/*.whl "$dist"/*.tar.gz "$dist"/*.oci.tar "$dist"/*.cdx.json "$dist"/*.intoto.json)
  ((${#files[@]})) || { echo "sign.sh: nothing to sign in dist/ (make wheel image)" >&2; exit 1; }
fi
[[ -f $key ]] || { echo "sign.sh: no key file $key" >&2; exit 2; }

case $mode in
  sign)
    for f in "${files[@]}"; do
      rm -f "$f.sig" # ssh-keygen refuses to overwrite one
      ssh-keygen -q -Y sign -f "$key" -n "$namespace" "$f" 2>/dev/null ||
        { echo "sign.sh: signing $f failed" >&2; exit 1; }
      echo "sign.sh: $f.sig"
    done
    ;;
  verify)
    failed=0
    for f in "${files[@]}"; do
      if [[ ! -f $f.sig ]]; then
        echo "sign.sh: $f: no signature ($f.sig)" >&2
        failed=1
      elif out=$(ssh-keygen -Y verify -f "$key" -I "$signer" -n "$namespace" -s "$f.sig" <"$f" 2>&1); then
        echo "sign.sh: $f: good signature by $signer"
      else
        echo "sign.sh: $f: BAD signature: $out" >&2
        failed=1
      fi
    done
    exit "$failed"
    ;;
  *) usage >&2; exit 2 ;;
esac
