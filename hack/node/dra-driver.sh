#!/usr/bin/env bash
# Build the node tier's test DRA driver (tests/node/dra-driver) into
# .cache/dra-driver/bin/braid-test-dra-driver (or $BRAID_DRA_DRIVER_BIN_DIR, which the tier
# reads too).
# Its unit tests run first (driver_test.go). Test-only: nothing built here is shipped. Needs Go (>= 1.21; the go directive in go.mod
# fetches a newer toolchain through the module proxy if needed) and the Go module proxy.
# A finished build is reused while its key (go.mod, go.sum, the sources, this script and the Go
# version) is unchanged; `--force` rebuilds. On 2 busy cores: about 7 minutes cold (empty module
# and build caches, downloads included), 5 with the modules downloaded; after `make kube-bins`,
# whose modules and compiled packages it shares, under 30 s.
set -euo pipefail

program=braid-test-dra-driver

main() {
	local here root src out key start
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	root=$(cd "$here/../.." && pwd)
	src=$root/tests/node/dra-driver
	out=${BRAID_DRA_DRIVER_BIN_DIR:-$root/.cache/dra-driver/bin}

	# shellcheck source=hack/lib/go-build.sh
	source "$root/hack/lib/go-build.sh"
	go_build_need_go 1.21

	cd "$src"
	key=$(go_build_key go.mod go.sum ./*.go "$here/dra-driver.sh" "$root/hack/lib/go-build.sh")

	if go_build_current "$out" "$key" "${1:-}" && [[ -x $out/$program ]]; then
		echo "dra-driver.sh: $out/$program is up to date"
		exit 0
	fi

	go_build_stage "$out"
	echo "dra-driver.sh: building $program into $out (a cold build takes minutes)"
	start=$SECONDS
	# The driver's own unit tests (claims held by one claim at a time, network data, state)
	# gate the build: a driver that breaks them never reaches the node tier.
	go test -mod=readonly -count=1 ./...
	CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$staging/$program" .
	go_build_publish "$out" "$key"
	echo "dra-driver.sh: done in $((SECONDS - start)) s"
}

# Everything runs from main: editing this file during a build cannot derail the running one.
main "$@"
