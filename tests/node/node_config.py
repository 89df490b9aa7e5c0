"""The node tier's configuration files: containerd's config.toml, kubelet's configuration,
client-certificate kubeconfigs and the node's cluster (default) network.

Every path a component writes to is under the node's directory, except the ones tier.sh
gives the node as its own tmpfs (/etc/cni/net.d, /opt/cni/bin, /var/lib/cni, /run/containerd
for the shims' sockets, /var/log/containers for kubelet's log links).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import node_host

CNI_CONF_DIR = Path("/etc/cni/net.d")
CNI_BIN_DIR = Path("/opt/cni/bin")
CNI_STATE_DIR = Path("/var/lib/cni")
CLUSTER_NETWORK = "cluster"
CLUSTER_CONFLIST = CNI_CONF_DIR / "10-cluster.conflist"
POD_SUBNET = "10.244.0.0/24"
PAUSE_IMAGE = "localhost/braid-pause:1.0"
BUSYBOX_IMAGE = "localhost/braid-busybox:1.0"
# "native" works on any filesystem.
SNAPSHOTTER = "native"
# Alpha gates the node tier turns on in kube-scheduler, kube-controller-manager and kubelet
# (kube-apiserver: tests/cluster/apiserver.py): DRAExtendedResource, a DRA device asked for as
# an extended resource (test_node_braid_7b_dra_extended.py).
FEATURE_GATES = {"DRAExtendedResource": True}
FEATURE_GATE_FLAG = ",".join(f"{k}={str(v).lower()}" for k, v in FEATURE_GATES.items())


def cluster_conflist() -> dict[str, Any]:
    """The node's default network: a bridge with host-local addresses and portmap. No route
    beyond the pod subnet and no masquerading: nothing a pod sends leaves the machine."""
    return {
        "cniVersion": "1.0.0",
        "name": CLUSTER_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": node_host.BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]]},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def write_cluster_network() -> Path:
    CLUSTER_CONFLIST.write_text(json.dumps(cluster_conflist(), indent=2) + "\n")
    return CLUSTER_CONFLIST


def containerd_config(root: Path) -> str:
    """containerd 1.6 for kubelet: its own root, state, sockets and runc root under `root`."""
    return f"""\
version = 2
root = "{root / "root"}"
state = "{root / "state"}"

[grpc]
  address = "{root / "containerd.sock"}"

[ttrpc]
  address = "{root / "containerd.sock.ttrpc"}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # Without it runc fails here with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  # Pods' network namespaces under <state>/netns, not the machine's /run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "{SNAPSHOTTER}"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{root / "runc"}"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{CNI_CONF_DIR}"
    max_conf_num = 1
"""


def kubelet_config(
    *,
    ca_file: Path,
    containerd_socket: Path,
    pod_logs_dir: Path,
    static_pod_dir: Path,
    resolv_conf: Path,
    port: int,
    healthz_port: int,
) -> dict[str, Any]:
    """kubelet's configuration: cgroupfs under the node's own cgroup root, no iptables chains
    of its own, no image garbage collection and eviction thresholds a test machine meets."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_host.NODE_IP,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node_host.CGROUP_ROOT}",
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{containerd_socket}",
        "podLogsDir": str(pod_logs_dir),
        "staticPodPath": str(static_pod_dir),
        "fileCheckFrequency": "5s",
        # ConfigMap volumes follow their ConfigMap at each pod sync: the default minute would
        # make a live configuration change take that long.
        "syncFrequency": "10s",
        "resolvConf": str(resolv_conf),
        "makeIPTablesUtilChains": False,
        "protectKernelDefaults": False,
        "serializeImagePulls": False,
        "featureGates": FEATURE_GATES,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
    }


def cert_kubeconfig(
    path: Path, *, server: str, ca_file: Path, cert: Path, key: Path, user: str
) -> Path:
    """A kubeconfig authenticating with a client certificate (files named, CA inline)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "braid-node",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [
            {"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": user, "context": {"cluster": "braid-node", "user": user}}],
        "current-context": user,
    }
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    path.chmod(0o600)
    return path
