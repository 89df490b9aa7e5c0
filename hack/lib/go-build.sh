# shellcheck shell=bash
# What the Go build scripts of the test tiers share (hack/kube/build.sh, hack/multus/build.sh,
# hack/node/dra-driver.sh, benches/scale/build.sh): the Go check, the build key, the reuse check
# and the staged build directory that replaces the output only once the build is whole.
# Sourced, not run; messages start with the name of the script that sources it.

# Exits with a clear message when Go is missing; $1 is the minimum version the script needs.
go_build_need_go() {
	if ! command -v go >/dev/null 2>&1; then
		echo "${0##*/}: Go is not installed; install Go >= $1 and retry" >&2
		exit 1
	fi
}

# Prints the build key: the Go version, OS and architecture, then the files named.
go_build_key() {
	{
		go env GOVERSION GOOS GOARCH
		cat "$@"
	} | sha256sum | cut -d' ' -f1
}

# True when the output directory $1 was built with the key $2 and $3 is not `--force`.
go_build_current() {
	[[ ${3:-} != --force && $(cat "$1/.build-key" 2>/dev/null) == "$2" ]]
}

# Makes a staging directory beside the output directory $1 and sets the caller's `staging` to
# it; it is removed on exit unless go_build_publish moved it into place. The cache directory
# holding $1 is never committed: it ignores itself.
go_build_stage() {
	mkdir -p "${1%/*}"
	echo '*' >"${1%/*}/.gitignore"
	staging=$(mktemp -d "${1%/*}/build.XXXXXX")
	trap 'rm -rf "$staging"' EXIT
}

# Records the key $2 in the staging directory and puts it in place of the output directory $1.
go_build_publish() {
	echo "$2" >"$staging/.build-key"
	rm -rf "$1"
	mv "$staging" "$1"
	trap - EXIT
}
