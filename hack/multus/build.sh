#!/usr/bin/env bash
# Build Multus v4 at the version go.mod pins, into .cache/multus/bin/ (or $BRAID_MULTUS_BIN_DIR):
# thin (`multus`, the one-shot CNI binary) for `braidctl bench --mode compare --multus`
# (docs/performance.md), and thick (`multus-daemon` and its CNI binary `multus-shim`) for
# `make bench-scale` (docs/scale.md). Test-only: nothing built here is shipped. Needs Go and the
# Go module proxy, as hack/kube/build.sh does. A finished build is reused while its key (go.mod, go.sum,
# this script and the Go version) is unchanged; `--force` rebuilds. About a minute on 2 cores
# with the module cache warm.
set -euo pipefail

module=gopkg.in/k8snetworkplumbingwg/multus-cni.v4

main() {
	local here root out key version ldflags staging
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	root=$(cd "$here/../.." && pwd)
	out=${BRAID_MULTUS_BIN_DIR:-$root/.cache/multus/bin}

	# shellcheck source=hack/lib/go-build.sh
	source "$root/hack/lib/go-build.sh"
	go_build_need_go 1.21

	cd "$here"
	key=$(go_build_key go.mod go.sum tools.go build.sh "$root/hack/lib/go-build.sh")
	if go_build_current "$out" "$key" "${1:-}" &&
		[[ -x $out/multus && -x $out/multus-daemon && -x $out/multus-shim ]]; then
		echo "build.sh: $out is up to date"
		exit 0
	fi

	version=$(go list -m -f '{{.Version}}' "$module")
	# As Multus's own build stamps it (`multus -version`).
	ldflags="-X $module/pkg/multus.version=$version"
	go_build_stage "$out"
	echo "build.sh: building multus, multus-daemon and multus-shim $version into $out"
	CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$staging/" \
		"$module/cmd/multus" "$module/cmd/multus-daemon" "$module/cmd/multus-shim"
	go_build_publish "$out" "$key"
	echo "build.sh: done: $("$out/multus" -version)"
}

# Everything runs from main: editing this file during a build cannot derail the running one.
main "$@"
