"""braid's configuration: Multus keys with Multus defaults, braid's keys, warnings, type errors."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from braid.config import LoadedConfig, load_braid_config
from braid.errors import CniError

# A Multus thin configuration as its docs show it, with only `type` changed.
MULTUS_STYLE = {
    "cniVersion": "0.3.1",
    "name": "multus-cni-network",
    "type": "braid",
    "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
    "confDir": "/etc/cni/multus/net.d",
    "cniDir": "/var/lib/cni/multus",
    "binDir": "/opt/cni/bin",
    "logFile": "/var/log/multus.log",
    "logLevel": "debug",
    "logOptions": {"maxAge": 5, "maxSize": 100, "maxBackups": 5, "compress": True},
    "capabilities": {"portMappings": True},
    "readinessindicatorfile": "/run/flannel/subnet.env",
    "namespaceIsolation": True,
    "globalNamespaces": "default,tenant1, tenant2",
    "clusterNetwork": "flannel-conf",
    "defaultNetworks": ["sidecar"],
    "systemNamespaces": ["kube-system", "infra"],
    "multusNamespace": "kube-public",
    "retryDeleteOnError": True,
    "auxiliaryCNIChainName": "vendor-chain",
    "daemonSocketDir": "/run/braid/",
    "logToStderr": False,
}


def load(doc: Mapping[str, object]) -> LoadedConfig:
    return load_braid_config(json.dumps(doc).encode())


def test_multus_configuration_reads_unchanged() -> None:
    loaded = load_braid_config(json.dumps(MULTUS_STYLE).encode())
    cfg = loaded.config
    # every key is understood, auxiliaryCNIChainName included: nothing to warn about
    assert loaded.warnings == ()
    assert cfg.cluster_network == "flannel-conf"
    assert cfg.default_networks == ["sidecar"]
    assert cfg.namespace_isolation is True
    assert cfg.kubernetes.global_namespace_set() == {"default", "tenant1", "tenant2"}
    assert cfg.kubernetes.system_namespaces == ("kube-system", "infra")
    assert cfg.multus_namespace == "kube-public"
    assert cfg.cni_dir == "/var/lib/cni/multus"
    assert cfg.log_options.max_backups == 5
    assert cfg.log_to_stderr is False
    assert cfg.auxiliary_cni_chain_name == "vendor-chain"
    assert cfg.retry_delete_on_error is True
    assert cfg.capabilities == {"portMappings": True}


def test_defaults_are_multus_defaults_plus_braid_keys() -> None:
    cfg = load_braid_config(b'{"type": "braid", "clusterNetwork": "x"}').config
    assert cfg.conf_dir == "/etc/cni/multus/net.d"
    assert cfg.cni_dir == "/var/lib/cni/braid"
    assert cfg.bin_dir == "/opt/cni/bin"
    assert cfg.kubernetes.system_namespaces == ("kube-system",)
    assert cfg.multus_namespace == "kube-system"
    assert cfg.global_namespaces is None
    assert cfg.kubernetes.global_namespace_set() == {"default"}
    assert cfg.namespace_isolation is False
    assert cfg.log_to_stderr is True
    assert cfg.log_level == "panic"
    assert cfg.readinessindicatorfile == ""
    assert cfg.plugin_timeout is None
    assert cfg.nad_dir == "/etc/cni/braid/nads"
    assert cfg.pod_dir == "/etc/cni/braid/pods"
    assert cfg.network_status_keys == "multus"


def test_global_namespaces_set_means_default_must_be_listed() -> None:
    cfg = load_braid_config(b'{"type": "braid", "globalNamespaces": "shared"}').config
    assert cfg.kubernetes.global_namespace_set() == {"shared"}


def test_braid_keys() -> None:
    doc = {"type": "braid", "nadDir": "/n", "podDir": "/p", "pluginTimeout": 2.5}
    cfg = load_braid_config(json.dumps(doc).encode()).config
    assert (cfg.nad_dir, cfg.pod_dir, cfg.plugin_timeout) == ("/n", "/p", 2.5)


@pytest.mark.parametrize("value", ["multus", "v1"])
def test_network_status_keys(value: str) -> None:
    loaded = load({"type": "braid", "networkStatusKeys": value})
    assert (loaded.config.network_status_keys, loaded.warnings) == (value, ())


@pytest.mark.parametrize("value", ["V1", "v1.3", "", "all"])
def test_network_status_keys_outside_its_values_is_code_7(value: str) -> None:
    with pytest.raises(CniError, match="`networkStatusKeys` must be 'multus' or 'v1'") as err:
        load({"type": "braid", "networkStatusKeys": value})
    assert err.value.code == 7


def test_unknown_keys_are_warnings_not_failures() -> None:
    doc = {"type": "braid", "clusterNetwork": "x", "cniConf": "/x", "chrootDir": "/hostroot"}
    loaded = load_braid_config(json.dumps(doc).encode())
    assert loaded.warnings == (
        "unknown configuration key 'chrootDir' ignored",
        "unknown configuration key 'cniConf' ignored",
    )


def test_standard_and_runtime_keys_are_not_warned_about() -> None:
    doc = {
        "type": "braid",
        "clusterNetwork": "x",
        "runtimeConfig": {"portMappings": []},
        "prevResult": {"cniVersion": "1.0.0"},
        "args": {"cni": {}},
        "cni.dev/valid-attachments": [],
        "cniVersions": ["1.0.0"],
    }
    assert load_braid_config(json.dumps(doc).encode()).warnings == ()


def test_odd_values_are_warnings() -> None:
    doc = {"type": "braid", "logLevel": "chatty", "clusterNetwork": "a", "delegates": [{}]}
    warnings = load_braid_config(json.dumps(doc).encode()).warnings
    assert any("logLevel 'chatty'" in w for w in warnings)
    assert any("clusterNetwork wins" in w for w in warnings)


@pytest.mark.parametrize(
    ("key", "value", "path"),
    [
        ("confDir", 1, "confDir"),
        ("namespaceIsolation", "yes", "namespaceIsolation"),
        ("defaultNetworks", "a,b", "defaultNetworks"),
        ("systemNamespaces", [1], "systemNamespaces[0]"),
        ("logOptions", {"maxAge": "old"}, "logOptions.maxAge"),
        ("delegates", {"type": "x"}, "delegates"),
        ("pluginTimeout", "10s", "pluginTimeout"),
        ("capabilities", {"ips": "yes"}, "capabilities"),
        ("networkStatusKeys", 1, "networkStatusKeys"),
    ],
)
def test_wrong_types_fail_with_code_7_naming_the_key(key: str, value: object, path: str) -> None:
    with pytest.raises(CniError) as err:
        load({"type": "braid", key: value})
    assert err.value.code == 7
    assert f"`{path}" in err.value.msg


@pytest.mark.parametrize("timeout", [0, -1])
def test_plugin_timeout_must_be_positive(timeout: int) -> None:
    with pytest.raises(CniError, match="pluginTimeout"):
        load({"type": "braid", "pluginTimeout": timeout})


def test_delegates_keep_their_bytes_verbatim() -> None:
    data = b'{"type":"braid","delegates":[{"name":"n","type":"bridge","mtu":1.50,"z":1,"a":2}]}'
    cfg = load_braid_config(data).config
    assert bytes(cfg.delegates[0]) == b'{"name":"n","type":"bridge","mtu":1.50,"z":1,"a":2}'


def test_conflist_with_a_braid_plugin_takes_list_name_and_version() -> None:
    doc = {
        "cniVersion": "1.0.0",
        "name": "braid-net",
        "plugins": [
            {"type": "braid", "clusterNetwork": "k", "name": "ignored"},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    cfg = load(doc).config
    assert (cfg.name, cfg.cni_version, cfg.cluster_network) == ("braid-net", "1.0.0", "k")


@pytest.mark.parametrize(
    "data",
    [
        b'{"name":"\xff","type":"braid"}',
        b'{"plugins":[{"type":"braid","name":"\xc3\x28"}]}',
        b'{"type":"braid","runtimeConfig":{"a":' + b"[" * 50_000 + b"]" * 50_000 + b"}}",
        b'{"plugins":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    ],
    ids=["not-utf8", "not-utf8-in-a-list", "deep", "deep-plugins"],
)
def test_a_configuration_that_does_not_decode_is_code_7(data: bytes) -> None:
    """Through ``read_request`` stdin like this is refused first (code 6); a configuration read
    from a file (the daemon's, ``braidctl validate``) is refused here."""
    with pytest.raises(CniError, match=r"not a JSON object|must be a list") as err:
        load_braid_config(data)
    assert err.value.code == 7


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"[1]", "not a JSON object"),
        (b"{", "not a JSON object"),
        (b'{"plugins": 3}', "plugins"),
        (b'{"plugins": [{"type": "bridge"}]}', "exactly one"),
        (b'{"plugins": [{"type": "braid"}, {"type": "braid"}]}', "exactly one"),
    ],
)
def test_malformed_configuration_is_code_7(data: bytes, needle: str) -> None:
    with pytest.raises(CniError, match=needle) as err:
        load_braid_config(data)
    assert err.value.code == 7


@pytest.mark.parametrize("key", ["cniDir", "confDir", "binDir", "daemonSocketDir", "nadDir"])
def test_a_path_with_a_nul_byte_is_code_7_naming_the_key(key: str) -> None:
    # Cut at the NUL, the path would name another file; Python would refuse it with a
    # ValueError deep in the engine.
    with pytest.raises(CniError, match=f"`{key}` must be a path without NUL bytes") as err:
        load({"type": "braid", key: "/var/lib/x\u0000y"})
    assert err.value.code == 7
