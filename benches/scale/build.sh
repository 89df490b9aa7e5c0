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
	# shellcheck source=hack/lib/go-build.sh
	source "$root/hack/lib/go-build.sh"
	go_build_need_go 1.22
	cd "$here/noopcni"
	key=$(go_build_key go.mod main.go main_test.go "$here/build.sh" "$root/hack/lib/go-build.sh")
	if go_build_current "$out" "$key" && [[ -x $out/noopcni ]]; then
		exit 0
	fi
	go_build_stage "$out"
	# Its protocol tests first (main_test.go): a delegate that answers wrong would skew the run.
	GOTOOLCHAIN=local GOFLAGS=-mod=mod go test -count=1 .
	GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$staging/noopcni" .
	go_build_publish "$out" "$key"
	echo "build.sh: built $out/noopcni"
}

main "$@"
