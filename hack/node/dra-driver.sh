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

	if ! command -v go >/dev/null 2>&1; then
		echo "dra-driver.sh: Go is not installed; install Go >= 1.21 and retry" >&2
		exit 1
	fi

	cd "$src"
	key=$({
		go env GOVERSION GOOS GOARCH
		cat go.mod go.sum ./*.go "$here/dra-driver.sh"
	} | sha256sum | cut -d' ' -f1)

	if [[ ${1:-} != --force && $(cat "$out/.build-key" 2>/dev/null) == "$key" && -x $out/$program ]]; then
		echo "dra-driver.sh: $out/$program is up to date"
		exit 0
	fi

	mkdir -p "${out%/*}"
	# The build output is never committed: ignore the whole cache directory from inside it.
	echo '*' >"${out%/*}/.gitignore"
	staging=$(mktemp -d "${out%/*}/build.XXXXXX")
	trap 'rm -rf "$staging"' EXIT
	echo "dra-driver.sh: building $program into $out (a cold build takes minutes)"
	start=$SECONDS
	# The driver's own unit tests (claims held by one claim at a time, network data, state)
	# gate the build: a driver that breaks them never reaches the node tier.
	go test -mod=readonly -count=1 ./...
	CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$staging/$program" .
	echo "$key" >"$staging/.build-key"

	rm -rf "$out"
	mv "$staging" "$out"
	trap - EXIT
	echo "dra-driver.sh: done in $((SECONDS - start)) s"
}

# Everything runs from main: editing this file during a build cannot derail the running one.
main "$@"
