#!/usr/bin/env bash
# Build Helm (`helm`) at the version go.mod pins, into .cache/helm/bin/ (or $BRAID_HELM_BIN_DIR),
# for the tests of braid's chart deploy/helm/braid: `helm lint` and `helm template` against the
# kustomize output in the cluster tier, `helm install`, `upgrade` and `uninstall` in the node
# tier. Test-only: nothing built here is shipped. Needs Go and the Go module proxy, as
# hack/kube/build.sh does. A finished build is reused while its key (go.mod, go.sum, this script
# and the Go version) is unchanged; `--force` rebuilds. About two minutes on 2 cores cold.
set -euo pipefail

module=helm.sh/helm/v3

main() {
	local here root out key version client_go major minor ldflags staging
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	root=$(cd "$here/../.." && pwd)
	out=${BRAID_HELM_BIN_DIR:-$root/.cache/helm/bin}

	if ! command -v go >/dev/null 2>&1; then
		echo "build.sh: Go is not installed; install Go >= 1.21 and retry" >&2
		exit 1
	fi

	cd "$here"
	key=$({
		go env GOVERSION GOOS GOARCH
		cat go.mod go.sum tools.go build.sh
	} | sha256sum | cut -d' ' -f1)
	if [[ ${1:-} != --force && $(cat "$out/.build-key" 2>/dev/null) == "$key" && -x $out/helm ]]; then
		echo "build.sh: $out/helm is up to date"
		exit 0
	fi

	version=$(go list -m -f '{{.Version}}' "$module")
	# As Helm's own Makefile stamps a release: its version (`helm version`), and the Kubernetes
	# version its client-go speaks (client-go v0.34 is Kubernetes 1.34), which `helm lint` and
	# `helm template` take as the cluster's when they have none.
	client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go)
	major=${client_go#v}
	major=$((${major%%.*} + 1))
	minor=${client_go#v*.}
	minor=${minor%%.*}
	ldflags="-s -w -X $module/internal/version.version=$version -X $module/internal/version.metadata="
	ldflags+=" -X $module/internal/version.gitTreeState=clean"
	ldflags+=" -X $module/pkg/lint/rules.k8sVersionMajor=$major -X $module/pkg/lint/rules.k8sVersionMinor=$minor"
	ldflags+=" -X $module/pkg/chartutil.k8sVersionMajor=$major -X $module/pkg/chartutil.k8sVersionMinor=$minor"
	mkdir -p "${out%/*}"
	# The build output is never committed: ignore the whole cache directory from inside it.
	echo '*' >"${out%/*}/.gitignore"
	staging=$(mktemp -d "${out%/*}/build.XXXXXX")
	trap 'rm -rf "$staging"' EXIT
	echo "build.sh: building helm $version into $out"
	CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$staging/" "$module/cmd/helm"
	echo "$key" >"$staging/.build-key"
	rm -rf "$out"
	mv "$staging" "$out"
	trap - EXIT
	echo "build.sh: done: $("$out/helm" version --short)"
}

# Everything runs from main: editing this file during a build cannot derail the running one.
main "$@"
