"""`braidctl migrate multus` on Multus's own configurations: every key is carried, changed (with
the reason) or reported as not carried (with the reason), and braid loads what it writes without
a warning.

The examples in multus/ are Multus's (github.com/k8snetworkplumbingwg/multus-cni):
`thin-configuration-md.json` is the example of docs/configuration.md; the thin entrypoint's
generated `00-multus.conf` inlines the node's default network in `delegates`;
`thick-daemon-config.json` is the example of docs/thick-plugin.md; `thick-configmap.yaml` is the
`multus-daemon-config` ConfigMap of deployments/multus-daemonset-thick.yml as `kubectl get -o
yaml` prints it, with the optional keys docs/thick-plugin.md and pkg/server list; the thick
daemon's generated shim configuration names the default network by its container path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid.commands.migrate import migrate_bytes
from braid.config.schema import load_braid_config

EXAMPLES = Path(__file__).parent / "multus"
POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"


def migrated(name: str) -> dict[str, Any]:
    path = EXAMPLES / name
    return migrate_bytes(path.read_bytes(), str(path)).as_data()


def not_carried(report: dict[str, Any]) -> dict[str, str]:
    return {n["key"]: n["reason"] for n in report["notCarried"]}


def changed(report: dict[str, Any]) -> dict[str, Any]:
    return {c["key"]: c["braid"] for c in report["changed"]}


def assert_braid_loads_it(config: dict[str, Any]) -> None:
    loaded = load_braid_config(json.dumps(config).encode())
    assert loaded.warnings == ()


def test_thin_configuration_reference_example() -> None:
    report = migrated("thin-configuration-md.json")
    assert report["kind"] == "thin"
    assert report["config"] == {
        "cniVersion": "0.3.1",
        "name": "node-cni-network",
        "type": "braid",
        "confDir": "/etc/cni/multus/net.d",
        "binDir": "/opt/cni/bin",
        "logFile": "/var/log/multus.log",
        "logLevel": "debug",
        "logOptions": {"maxAge": 5, "maxSize": 100, "maxBackups": 5, "compress": True},
        "capabilities": {"portMappings": True, POD_ANNOTATIONS: True},
        "readinessindicatorfile": "",
        "namespaceIsolation": False,
        "clusterNetwork": "defaultCRD",
        "defaultNetworks": ["sidecarCRD", "flannel"],
        "systemNamespaces": ["kube-system", "admin"],
        "multusNamespace": "kube-system",
    }
    reasons = not_carried(report)
    assert set(reasons) == {"kubeconfig", "cniDir", "Note1", "Note2", "delegates"}
    assert "service-account token" in reasons["kubeconfig"]
    assert "attachment records" in reasons["cniDir"]
    assert reasons["Note1"] == reasons["Note2"] == "not a Multus configuration key"
    assert reasons["delegates"] == "Multus ignores delegates when clusterNetwork is set"
    assert set(changed(report)) == {"type", "capabilities"}
    assert_braid_loads_it(report["config"])


def test_thin_generated_conf_leaves_the_inlined_default_network_to_braids_daemon() -> None:
    report = migrated("thin-generated-00-multus.conf")
    assert report["config"] == {
        "cniVersion": "0.3.1",
        "name": "multus-cni-network",
        "type": "braid",
        "logToStderr": False,
        "capabilities": {"portMappings": True, POD_ANNOTATIONS: True},
    }
    reasons = not_carried(report)
    assert set(reasons) == {"kubeconfig", "delegates[0]"}
    assert "names it clusterNetwork" in reasons["delegates[0]"]
    assert_braid_loads_it(report["config"])


def test_extra_inline_delegates_are_reported_with_what_to_do() -> None:
    doc = {
        "type": "multus",
        "delegates": [{"type": "flannel"}, {"type": "macvlan"}, {"type": "sriov"}],
    }
    report = migrate_bytes(json.dumps(doc).encode(), "x").as_data()
    reasons = not_carried(report)
    assert set(reasons) == {"delegates[0]", "delegates[1]", "delegates[2]"}
    assert "NetworkAttachmentDefinition" in reasons["delegates[1]"]
    assert "defaultNetworks" in reasons["delegates[2]"]


def test_thick_daemon_config_paths_become_the_nodes() -> None:
    report = migrated("thick-daemon-config.json")
    assert report["kind"] == "thick"
    assert report["config"] == {
        "cniVersion": "0.3.1",
        "type": "braid",
        "confDir": "/etc/cni/net.d",
        "logToStderr": True,
        "logLevel": "verbose",
        "binDir": "/opt/cni/bin",
        "capabilities": {POD_ANNOTATIONS: True},
    }
    assert set(not_carried(report)) == {
        "chrootDir",
        "logFile",
        "cniDir",
        "socketDir",
        "cniConfigDir",
        "multusConfigFile",
        "multusAutoconfigDir",
    }
    assert "inside its own container" in not_carried(report)["logFile"]
    assert changed(report)["confDir"] == "/etc/cni/net.d"
    assert_braid_loads_it(report["config"])


def test_thick_configmap_as_kubectl_prints_it() -> None:
    report = migrated("thick-configmap.yaml")
    assert report["kind"] == "thick"
    assert report["config"]["readinessindicatorfile"] == "/run/flannel/subnet.env"
    assert report["config"]["namespaceIsolation"] is True
    assert report["config"]["globalNamespaces"] == "default,infra"
    reasons = not_carried(report)
    assert set(reasons) == {
        "chrootDir",
        "socketDir",
        "cniConfigDir",
        "multusConfigFile",
        "multusAutoconfigDir",
        "metricsPort",
        "perNodeCertificate",
    }
    assert "daemonMetricsAddress" in reasons["metricsPort"]
    assert_braid_loads_it(report["config"])


def test_thick_generated_shim_conf_names_the_default_network_as_the_node_does() -> None:
    report = migrated("thick-generated-00-multus.conf")
    assert report["config"]["clusterNetwork"] == "/etc/cni/net.d/10-kindnet.conflist"
    assert report["config"]["type"] == "braid"
    assert set(not_carried(report)) == {"daemonSocketDir"}
    assert_braid_loads_it(report["config"])


def test_thick_primary_cni_file_and_another_conf_dir() -> None:
    doc = {
        "chrootDir": "/hostroot/",
        "multusMasterCNI": "10-calico.conflist",
        "multusAutoconfigDir": "/hostroot/etc/kubernetes/cni/net.d",
        "binDir": "/hostroot/var/lib/cni/bin",
        "forceCNIVersion": True,
        "overrideNetworkName": True,
    }
    report = migrate_bytes(json.dumps(doc).encode(), "x").as_data()
    assert report["config"]["clusterNetwork"] == "/etc/kubernetes/cni/net.d/10-calico.conflist"
    assert report["config"]["binDir"] == "/var/lib/cni/bin"
    reasons = not_carried(report)
    wanted = "cniConfDir to /etc/kubernetes/cni/net.d in braid's ConfigMap"
    assert wanted in reasons["multusAutoconfigDir"]
    assert set(reasons) == {
        "chrootDir",
        "multusAutoconfigDir",
        "forceCNIVersion",
        "overrideNetworkName",
    }
    assert_braid_loads_it(report["config"])


# Every key of Multus's configurations (pkg/types NetConf, pkg/server/config MultusConf,
# pkg/server ControllerNetConf and ShimNetConf) with a value of the right type.
MULTUS_KEYS: dict[str, Any] = {
    "cniVersion": "1.0.0",
    "name": "multus-cni-network",
    "type": "multus",
    "confDir": "/etc/cni/multus/net.d",
    "cniDir": "/var/lib/cni/multus",
    "binDir": "/opt/cni/bin",
    "delegates": [{"type": "bridge"}],
    "clusterNetwork": "k8s-pod-network",
    "defaultNetworks": ["a"],
    "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
    "logFile": "/var/log/multus.log",
    "logLevel": "error",
    "logToStderr": False,
    "logOptions": {"maxAge": 1, "maxSize": 2, "maxBackups": 3, "compress": False},
    "runtimeConfig": {"portMappings": []},
    "prevResult": {},
    "readinessindicatorfile": "/run/flannel/subnet.env",
    "namespaceIsolation": True,
    "globalNamespaces": "default",
    "auxiliaryCNIChainName": "vendor-chain",
    "systemNamespaces": ["kube-system"],
    "multusNamespace": "kube-system",
    "retryDeleteOnError": True,
    "capabilities": {"portMappings": True},
    "cniConfigDir": "/etc/cni/net.d",
    "daemonSocketDir": "/run/multus/socket",
    "multusConfigFile": "auto",
    "multusMasterCNI": "10-x.conf",
    "multusAutoconfigDir": "/etc/cni/net.d",
    "forceCNIVersion": False,
    "overrideNetworkName": False,
    "chrootDir": "/hostroot",
    "perNodeCertificate": {"enabled": False},
    "metricsPort": 9091,
    "socketDir": "/run/multus",
}


def test_every_multus_key_is_known_and_every_one_not_carried_says_why() -> None:
    report = migrate_bytes(json.dumps(MULTUS_KEYS).encode(), "x").as_data()
    reasons = not_carried(report)
    accounted = set(report["carried"]) | set(changed(report)) | set(reasons)
    assert set(MULTUS_KEYS) <= accounted
    assert all(reason and reason != "not a Multus configuration key" for reason in reasons.values())
    assert set(report["carried"]) >= {"auxiliaryCNIChainName", "retryDeleteOnError", "logOptions"}
    assert_braid_loads_it(report["config"])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("confDir", 7),
        ("namespaceIsolation", "yes"),
        ("defaultNetworks", "a"),
        ("systemNamespaces", ["a", 1]),
        ("logLevel", "info"),
        ("logOptions", [1]),
        ("cniVersion", "9.9.9"),
        ("globalNamespaces", ""),
        ("delegates", {"type": "bridge"}),
        ("capabilities", "portMappings"),
    ],
)
def test_a_value_braid_would_refuse_is_not_carried(key: str, value: Any) -> None:
    report = migrate_bytes(json.dumps({"type": "multus", key: value}).encode(), "x").as_data()
    assert key in not_carried(report)
    assert key not in report["config"]
    assert_braid_loads_it(report["config"])


def test_log_option_and_capability_entries_are_judged_one_by_one() -> None:
    doc = {
        "type": "multus",
        "logLevel": "DEBUG",
        "logOptions": {"maxAge": -1, "maxSize": True, "maxBackups": 2, "compress": 1, "x": 1},
        "capabilities": {"portMappings": True, "bandwidth": "yes"},
    }
    report = migrate_bytes(json.dumps(doc).encode(), "x").as_data()
    assert report["config"]["logLevel"] == "debug"
    assert report["config"]["logOptions"] == {"maxBackups": 2}
    assert report["config"]["capabilities"] == {"portMappings": True, POD_ANNOTATIONS: True}
    assert set(not_carried(report)) == {
        "logOptions.maxAge",
        "logOptions.maxSize",
        "logOptions.compress",
        "logOptions.x",
        "capabilities.bandwidth",
    }


def test_a_conflist_holding_multus_and_another_plugin() -> None:
    doc = {
        "cniVersion": "1.0.0",
        "name": "multus-cni-network",
        "plugins": [{"type": "multus", "clusterNetwork": "calico"}, {"type": "tuning"}],
    }
    report = migrate_bytes(json.dumps(doc).encode(), "x").as_data()
    assert report["config"]["name"] == "multus-cni-network"
    assert report["config"]["cniVersion"] == "1.0.0"
    assert report["config"]["clusterNetwork"] == "calico"
    assert not_carried(report)["plugins[0]"].startswith("chained beside Multus")
