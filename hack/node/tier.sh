#!/usr/bin/env bash
# The node tier: `pytest tests/node` (extra arguments passed through) on a real single-node
# Kubernetes that tests/node starts on this machine.
#
# Everything runs inside a private mount and PID namespace:
# - every mount is made private there (nothing propagates back to the machine), then `/` is
#   made rshared, as systemd makes it on a real node, so hostPath volumes with
#   mountPropagation HostToContainer see mounts made on the node after the pod started;
# - the machine-wide directories braid's DaemonSet mounts as hostPath (and the few that
#   kubelet and containerd use whatever their configuration says) are the node's own fresh
#   tmpfs, gone when the tier ends; /opt/cni/bin holds copies of the reference plugins;
# - when the tier ends, however it ends, the kernel kills every process it started (kubelet,
#   containerd, shims, pods' processes) with the namespace.
# Afterwards this script removes the node's temp directory (BRAID_NODE_TMPDIR), the mountpoint
# directories it had to create and whatever a killed run left in the machine's network and
# cgroup trees, and restores ip_forward.
# Needs root, util-linux's unshare, the reference CNI plugins (containernetworking-plugins)
# and `make install`; the tests check the rest and say what is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cni_plugins=${CNI_BIN_DIR:-/usr/lib/cni}
python=$root/.venv/bin/python
# The node's own copies of machine-wide directories.
node_dirs=(
	/etc/cni/net.d /opt/cni/bin /var/lib/cni /run/braid /etc/braid /run/netns
	/run/containerd     # containerd-shim-runc-v2's sockets (/run/containerd/s, fixed)
	/var/log/containers # kubelet's container log symlinks (fixed)
	/run/cni /run/k8s.cni.cncf.io # braid's read-write hostPath volumes on the node's /run
)
# braid's DaemonSet mounts this file of the node read-write (FileOrCreate): made here when the
# machine has none, removed afterwards.
node_files=(/run/xtables.lock)
# Names tests/node/node_cluster.py gives what it creates outside the namespace.
node_links=(braid-node0 cni-node0)
cgroup_root=braid-node-tier
# Set by main, read by finish (the EXIT trap).
created=()
created_files=()
forward=
tmp=
child=

fail() {
	echo "hack/node/tier.sh: $*" >&2
	exit 1
}

# Inside the namespaces (PID 1 of the new PID namespace).
inside() {
	local dir
	mount --make-rshared /
	for dir in "${node_dirs[@]}"; do
		mount -t tmpfs -o mode=0755 braid-node "$dir"
	done
	cp -a "$cni_plugins"/. /opt/cni/bin/
	cd "$root"
	export BRAID_NODE_TIER=1
	# Not exec: PID 1 must stay a shell, which reaps the orphans (exited shims) it inherits.
	local status=0
	"$python" -m pytest tests/node "$@" || status=$?
	return "$status"
}

# Removes what a run killed half-way may have left outside the namespace.
sweep() {
	local link hierarchy
	for link in "${node_links[@]}"; do
		if ip link show "$link" >/dev/null 2>&1; then
			ip link delete "$link" || true
		fi
	done
	for hierarchy in /sys/fs/cgroup/*/; do
		# Deepest first; killed processes may take a moment to leave their cgroups.
		for _ in {1..10}; do
			[[ -d $hierarchy$cgroup_root ]] || break
			find "$hierarchy$cgroup_root" -depth -type d -exec rmdir {} + 2>/dev/null || sleep 0.5
		done
	done
}

# After the namespace is gone: what a killed run left, ip_forward, the node's temp directory
# (nothing is mounted below it any more) and the mountpoint directories created for the tier
# (rmdir: only empty ones, in case something else wrote there meanwhile).
finish() {
	sweep
	echo "$forward" >/proc/sys/net/ipv4/ip_forward
	if [[ -n $tmp ]] && ! grep -qF " $tmp/" /proc/self/mountinfo; then
		rm -rf "$tmp"
	fi
	if ((${#created[@]})); then
		rmdir "${created[@]}" 2>/dev/null || true
	fi
	if ((${#created_files[@]})); then
		rm -f "${created_files[@]}"
	fi
}

main() {
	local dir file parent status
	if [[ ${1:-} == --inside ]]; then
		shift
		inside "$@"
		return
	fi
	[[ $(id -u) == 0 ]] || fail "needs root (kubelet, containerd, mounts, network links): run it as root"
	command -v unshare >/dev/null || fail "unshare is missing: apt-get install util-linux"
	command -v ip >/dev/null || fail "ip is missing: apt-get install iproute2"
	[[ -x $cni_plugins/bridge ]] ||
		fail "no reference CNI plugins in $cni_plugins: apt-get install containernetworking-plugins"
	[[ -x $python ]] || fail "no virtualenv at $root/.venv: run make install"
	# The node's links, cgroup root and addresses are fixed names: one run at a time.
	if pgrep -f -- "hack/node/tier.sh --inside" >/dev/null; then
		fail "another node tier run is in progress (pgrep -af 'tier.sh --inside'); wait for it"
	fi

	sweep
	forward=$(cat /proc/sys/net/ipv4/ip_forward)
	trap finish EXIT
	for dir in "${node_dirs[@]}"; do
		# Every directory created on the way down is removed at the end, deepest first.
		parent=$dir
		while [[ ! -e $parent ]]; do
			created+=("$parent")
			parent=$(dirname "$parent")
		done
		mkdir -p "$dir"
	done
	for file in "${node_files[@]}"; do
		if [[ ! -e $file ]]; then
			: >"$file"
			created_files+=("$file")
		fi
	done
	tmp=$(mktemp -d /tmp/braid-node.XXXXXX)
	export BRAID_NODE_TMPDIR=$tmp

	# In the background (stdin kept) so that a TERM or HUP sent to this script ends the tier
	# at once: unshare's death kills PID 1 of the namespace, and with it every process in it.
	# An interrupt from the terminal reaches pytest itself (a background command would ignore
	# it: env restores it), which tears the node down; unshare waits for it.
	# Propagation private first: a mount the machine shares (ip netns makes /run/netns
	# shared) must not carry the node's mounts back out; `inside` then shares / again, within.
	exec 3<&0
	env --default-signal=INT,QUIT \
		unshare --mount --propagation private --pid --fork --kill-child --mount-proc \
		"$here/tier.sh" --inside "$@" <&3 3<&- &
	child=$!
	exec 3<&-
	trap 'kill -KILL "$child" 2>/dev/null || true' TERM HUP
	trap : INT
	status=0
	while kill -0 "$child" 2>/dev/null; do
		wait "$child" || status=$?
	done
	return "$status"
}

main "$@"
