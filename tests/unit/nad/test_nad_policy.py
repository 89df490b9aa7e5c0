"""The operator's configuration over the runtime's: which keys each decides."""

from __future__ import annotations

import json
from pathlib import Path

from braid.cni.hostroot import HostRoot
from braid.config.schema import BraidConfig, load_braid_config
from braid.nad.policy import RUNTIME_KEYS, Localizer, overlay, policy_attributes

# What `braidctl daemon --cni-conf-dir` writes on a node: the shim's keys and the default
# network, nothing of the policy.
CONFLIST = {
    "cniVersion": "0.4.0",
    "name": "braid-cni-network",
    "plugins": [
        {
            "type": "braid",
            "clusterNetwork": "/etc/cni/net.d/10-cluster.conflist",
            "capabilities": {"portMappings": True},
            "cniDir": "/var/lib/cni/braid",
            "runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 8080}]},
        }
    ],
}
# A ConfigMap's braid.conf.
OPERATOR = {
    "cniVersion": "1.1.0",
    "name": "braid",
    "type": "braid",
    "namespaceIsolation": True,
    "systemNamespaces": ["kube-system", "infra"],
    "confDir": "/etc/cni/multus/net.d",
    "capabilities": {"bandwidth": True},
    "logLevel": "debug",
}


def merged() -> tuple[BraidConfig, BraidConfig]:
    runtime = load_braid_config(json.dumps(CONFLIST).encode()).config
    policy = load_braid_config(json.dumps(OPERATOR).encode())
    return runtime, overlay(runtime, policy.config, policy_attributes(policy))


def test_the_operators_keys_win() -> None:
    _, config = merged()
    assert config.namespace_isolation is True
    assert config.kubernetes.system_namespaces == ("kube-system", "infra")
    assert config.conf_dir == "/etc/cni/multus/net.d"
    assert config.log_level == "debug"


def test_the_runtimes_own_keys_come_from_the_runtime() -> None:
    runtime, config = merged()
    assert config.cni_version == "0.4.0"  # the result goes back at the runtime's version
    assert config.name == "braid-cni-network"
    assert config.capabilities == {"portMappings": True}  # what the runtime was told
    assert config.runtime_config == runtime.runtime_config
    assert {"cniVersion", "name", "capabilities", "runtimeConfig"} <= RUNTIME_KEYS


def test_keys_the_operator_leaves_out_keep_the_conflists_then_the_defaults() -> None:
    _, config = merged()
    assert config.cluster_network == "/etc/cni/net.d/10-cluster.conflist"
    assert config.cni_dir == "/var/lib/cni/braid"
    assert config.multus_namespace == "kube-system"  # neither sets it: braid's default


def test_without_operator_keys_the_runtimes_configuration_is_used_as_it_is() -> None:
    runtime = load_braid_config(json.dumps(CONFLIST).encode()).config
    empty = load_braid_config(b'{"type": "braid", "cniVersion": "1.0.0"}')
    assert policy_attributes(empty) == ()
    assert overlay(runtime, empty.config, ()) is runtime


def test_files_are_named_through_the_root_but_plugin_dirs_stay_the_nodes(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    config = load_braid_config(
        json.dumps(
            {
                "type": "braid",
                "cniDir": "/var/lib/cni/braid",
                "binDir": "/opt/cni/bin",
                "daemonSocketDir": "/var/run/braid",
                "clusterNetwork": "/etc/cni/net.d/10-a.conflist",
                "defaultNetworks": ["sidecar", "/etc/cni/net.d/20-b.conf"],
            }
        ).encode()
    ).config
    root = HostRoot(str(tmp_path))
    local = Localizer(root)(config)
    root.close()
    assert local.cni_dir == f"{tmp_path}/var/lib/cni/braid"
    assert local.daemon_socket_dir == f"{tmp_path}/run/braid"  # the node's link followed
    assert local.cluster_network == f"{tmp_path}/etc/cni/net.d/10-a.conflist"
    assert local.default_networks == ["sidecar", f"{tmp_path}/etc/cni/net.d/20-b.conf"]
    assert local.bin_dir == "/opt/cni/bin"  # looked up and executed inside the root
    assert Localizer(None)(config) is config


def test_device_paths_stay_the_nodes(tmp_path: Path) -> None:
    """The engine opens kubelet's socket and the device-information files through the root
    itself and hands `CNIDeviceInfoFile` to delegates: named through the root here too, they
    would be the root's path twice over, and no path of the node."""
    config = load_braid_config(
        json.dumps(
            {
                "type": "braid",
                "podResourcesSocket": "/var/lib/kubelet/pod-resources/kubelet.sock",
                "deviceInfoDir": "/run/k8s.cni.cncf.io/devinfo",
            }
        ).encode()
    ).config
    root = HostRoot(str(tmp_path))
    local = Localizer(root)(config)
    root.close()
    assert local.pod_resources_socket == "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert local.device_info_dir == "/run/k8s.cni.cncf.io/devinfo"
