#!/usr/bin/env bash
# Build the scale tier's delegate, noopcni (benches/scale/noopcni: a CNI plugin of the standard
# library alone that attaches nothing), into .cache/scale/bin/ (or $BRAID_SCALE_BIN_DIR). Needs Go
# >= 1.22 and nothing from the network. Test-only: nothing built here is shipped. Reused while
# the sources, this script and the Go version are unchanged.
set -euo pipefail

main() {
	local here root out key staging
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	root=$(cd "$here/../.." && pwd)
	out=${BRAID_SCALE_BIN_DIR:-$root/.cache/scale/bin}
	if ! command -v go >/dev/null 2>&1; then
		echo "build.sh: Go is not installed; install Go >= 1.22 and retry" >&2
		exit 1
	fi
	cd "$here/noopcni"
	key=$({
		go env GOVERSION GOOS GOARCH
		cat go.mod main.go main_test.go "$here/build.sh"
	} | sha256sum | cut -d' ' -f1)
	if [[ $(cat "$out/.build-key" 2>/dev/null) == "$key" && -x $out/noopcni ]]; then
		exit 0
	fi
	mkdir -p "${out%/*}"
	echo '*' >"${out%/*}/.gitignore"
	staging=$(mktemp -d "${out%/*}/build.XXXXXX")
	trap 'rm -rf "$staging"' EXIT
	# Its protocol tests first (main_test.go): a delegate that answers wrong would skew the run.
	GOTOOLCHAIN=local GOFLAGS=-mod=mod go test -count=1 .
	GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$staging/noopcni" .
	echo "$key" >"$staging/.build-key"
	rm -rf "$out"
	mv "$staging" "$out"
	trap - EXIT
	echo "build.sh: built $out/noopcni"
}

main "$@"
