#!/usr/bin/env bash
# Build kube-apiserver, etcd and kubectl (its kustomize renders deploy/) for braid's cluster
# test tier, and kubelet, kube-controller-manager and kube-scheduler for its node tier, into
# .cache/kube/bin/ (or $BRAID_KUBE_BIN_DIR, which both tiers read too).
# Test-only: nothing built here is shipped. Needs Go (>= 1.21; the go directive in go.mod
# fetches a newer toolchain through the module proxy if needed) and the Go module proxy.
# A finished build is reused while its key (go.mod, go.sum, the sources, this script and the
# Go version) is unchanged; `--force` rebuilds. On 2 cores: about 13 minutes cold (empty module
# and build caches, downloads included), about 20 s with warm caches (linking only).
set -euo pipefail

programs=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet)

main() {
	local here root out key kube_version minor pkg ldflags start
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	root=$(cd "$here/../.." && pwd)
	out=${BRAID_KUBE_BIN_DIR:-$root/.cache/kube/bin}

	# shellcheck source=hack/lib/go-build.sh
	source "$root/hack/lib/go-build.sh"
	go_build_need_go 1.21

	cd "$here"
	key=$(go_build_key go.mod go.sum tools.go etcd/main.go build.sh "$root/hack/lib/go-build.sh")

	if go_build_current "$out" "$key" "${1:-}" && built; then
		echo "build.sh: $out is up to date"
		exit 0
	fi

	kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
	minor=${kube_version#v1.}
	minor=${minor%%.*}
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"

	go_build_stage "$out"
	echo "build.sh: building ${programs[*]} $kube_version and etcd into $out (a cold build takes minutes)"
	start=$SECONDS
	# One invocation: the programs share most packages, each compiled once.
	CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$staging/" \
		"${programs[@]/#/k8s.io/kubernetes/cmd/}" ./etcd
	go_build_publish "$out" "$key"
	echo "build.sh: done in $((SECONDS - start)) s: $("$out/kube-apiserver" --version), etcd $("$out/etcd" --version | head -1)"
}

# Whether every program is in $out.
built() {
	local program
	for program in etcd "${programs[@]}"; do
		[[ -x $out/$program ]] || return 1
	done
}

# Everything runs from main: editing this file during a build cannot derail the running one.
main "$@"
