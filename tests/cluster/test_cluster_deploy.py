"""deploy/'s base and overlays render with the real kustomize and are accepted by the real API
server (server-side apply, dry run): schema, defaulting and admission, as `kubectl apply -k`
would. Pod Security and a cluster without the admission policy's API:
test_cluster_deploy_apply.py."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import apiserver
import cluster_manifests
import kubernetes.client
import pytest

from braid.config.schema import load_braid_config
from braid.version import package_version

PLACEHOLDER_IMAGE = "registry.example/braid-cni/braid"
KINDS = ["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
         "ClusterRoleBinding", "ConfigMap", "DaemonSet"]  # fmt: skip
# The policy, its binding for braid's account and its binding for braid-thin's, and the right
# to read them (the daemon's check of the policy).
POLICY_KINDS = ["ValidatingAdmissionPolicy"] + ["ValidatingAdmissionPolicyBinding"] * 2 + [
    "ClusterRole", "ClusterRoleBinding"
]  # fmt: skip
OPERATIONS = apiserver.REPO_ROOT / "docs" / "operations.md"
DAEMON_CAPABILITIES = {"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_CHROOT", "DAC_OVERRIDE"}
# The node's paths the daemon writes (docs/adr/0012-least-privilege.md).
WRITABLE_NODE_PATHS = {"/etc/cni/net.d", "/opt/cni/bin", "/var/lib/cni", "/run/braid", "/run/cni",
                       "/run/k8s.cni.cncf.io", "/run/xtables.lock"}  # fmt: skip


def documented_block(marker: str) -> str:
    """The fenced block of docs/operations.md whose first line holds `marker`."""
    blocks = re.findall(r"^ *```\w*\n(.*?)^ *```", OPERATIONS.read_text(), re.S | re.M)
    [found] = [b for b in blocks if marker in b.splitlines()[0]]
    indent = len(found) - len(found.lstrip(" "))
    return "".join(line[indent:] + "\n" for line in found.splitlines())


def daemonset(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == "DaemonSet"]
    return found


@pytest.mark.parametrize(
    ("overlay", "kinds"),
    [
        # The admission policy is a component of its own (Kubernetes 1.30 and later), which
        # the base leaves out and the overlays include.
        ("base", KINDS),
        ("overlays/dev", KINDS + POLICY_KINDS),
        ("overlays/prod", KINDS + POLICY_KINDS),
    ],
)
def test_every_object_is_accepted_by_the_server(
    kube_admin: kubernetes.client.ApiClient, overlay: str, kinds: list[str]
) -> None:
    docs = cluster_manifests.render(overlay)
    assert sorted(d["kind"] for d in docs) == sorted(kinds)
    for doc in docs:
        applied = cluster_manifests.server_side_apply(kube_admin, doc, dry_run=True)
        assert applied["metadata"]["name"] == doc["metadata"]["name"]


def test_the_daemonset_runs_on_every_node_with_the_host_mounts() -> None:
    spec = daemonset(cluster_manifests.render("base"))["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    assert spec["hostPID"] is True, "delegates read their own /proc entry in the node's /proc"
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["serviceAccountName"] == "braid"
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    [install] = spec["initContainers"]
    assert install["command"][:2] == ["braidctl", "install"]
    assert "--mode=none" in install["command"], "the daemon writes the configuration"
    [daemon] = spec["containers"]
    assert daemon["command"][:2] == ["braidctl", "daemon"]
    env = {e["name"]: e.get("value") for e in daemon["env"]}
    assert env["BRAID_HOST_ROOT"] == "/hostroot"
    assert env["BRAID_CONFIG"] == "/etc/braid/braid.conf"
    assert "--health-address=127.0.0.1:9191" in daemon["command"]
    # The probes ask the health endpoint on the node's loopback, apart from the metrics port
    # every pod of the node reaches.
    health = {"host": "127.0.0.1", "port": 9191}
    assert daemon["readinessProbe"]["httpGet"] == {**health, "path": "/readyz"}
    assert daemon["livenessProbe"]["httpGet"] == {**health, "path": "/healthz"}
    assert "cpu" not in daemon["resources"]["limits"]
    mounts = {m["mountPath"]: m for m in daemon["volumeMounts"]}
    assert mounts["/hostroot"]["mountPropagation"] == "HostToContainer"
    assert mounts["/hostroot"]["readOnly"] is True
    # Each node directory braid writes, read-write over the read-only root at its node path.
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert set(host_paths.values()) == {"/", *WRITABLE_NODE_PATHS}
    for mount in daemon["volumeMounts"]:
        if mount["name"] in host_paths and mount["name"] != "hostroot":
            assert mount["mountPath"] == "/hostroot" + host_paths[mount["name"]]
            assert not mount.get("readOnly", False)
    assert [m["name"] for m in install["volumeMounts"]] == ["cni-bin"]
    # Neither container privileged; the list and its reasons: docs/adr/0012-least-privilege.md.
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container, added in ((daemon, DAEMON_CAPABILITIES), (install, set())):
        context = container["securityContext"]
        assert "privileged" not in context
        assert context["capabilities"]["drop"] == ["ALL"]
        assert set(context["capabilities"].get("add", [])) == added
        assert context["readOnlyRootFilesystem"] is True


def config_key(container: dict[str, Any], variable: str) -> str:
    """The braid-config key `variable` of `container` is read from."""
    [entry] = [e for e in container["env"] if e["name"] == variable]
    assert "value" not in entry, f"{variable} is set in the DaemonSet, not in the ConfigMap"
    ref = entry["valueFrom"]["configMapKeyRef"]
    assert ref["name"] == "braid-config"
    return str(ref["key"])


@pytest.mark.parametrize("overlay", ["base", "overlays/dev", "overlays/prod"])
def test_each_cni_directory_is_set_in_the_configmap_alone(overlay: str) -> None:
    docs = cluster_manifests.render(overlay)
    [config] = [d["data"] for d in docs if d["kind"] == "ConfigMap"]
    spec = daemonset(docs)["spec"]["template"]["spec"]
    [install], [daemon] = spec["initContainers"], spec["containers"]
    assert config_key(daemon, "BRAID_CNI_CONF_DIR") == "cniConfDir"
    # The node file beside the shim the install container put there, kept by the daemon.
    assert config_key(daemon, "BRAID_SHIM_DIR") == "cniBinDir"
    assert config_key(install, "BRAID_CNI_BIN_DIR") == "cniBinDir"
    assert "--cni-bin-dir=$(BRAID_CNI_BIN_DIR)" in install["command"]
    assert "--bin-dir=$(BRAID_CNI_BIN_DIR)" in install["command"], "the node file's binDir"
    assert "--host-root=/hostroot" in install["command"]
    assert config["cniConfDir"] == "/etc/cni/net.d"
    assert config["cniBinDir"] == "/opt/cni/bin"
    assert_mounts_follow(spec, config)
    # No other copy of either directory in deploy/ (the DaemonSet's volumes get the
    # ConfigMap's), nor in braid.conf: the daemon gives braid.conf's confDir and binDir the
    # node's (operator_config.with_node_dirs).
    text = (cluster_manifests.DEPLOY_DIR / "base" / "daemonset.yaml").read_text()
    text += config["braid.conf"]
    assert "/etc/cni/net.d" not in text
    assert "/opt/cni/bin" not in text


def assert_mounts_follow(spec: dict[str, Any], config: dict[str, str]) -> None:
    """The read-write volumes of the two CNI directories are the ConfigMap's, mounted at
    their node paths under /hostroot."""
    volumes = {v["name"]: v.get("hostPath", {}).get("path") for v in spec["volumes"]}
    assert volumes["cni-conf"] == config["cniConfDir"]
    assert volumes["cni-bin"] == config["cniBinDir"]
    [install], [daemon] = spec["initContainers"], spec["containers"]
    mounts = {m["name"]: m["mountPath"] for m in daemon["volumeMounts"]}
    assert mounts["cni-conf"] == "/hostroot" + config["cniConfDir"]
    assert mounts["cni-bin"] == "/hostroot" + config["cniBinDir"]
    assert install["volumeMounts"] == [
        {"name": "cni-bin", "mountPath": "/hostroot" + config["cniBinDir"]}
    ]


def test_an_overlay_moves_the_cni_directories_as_documented(tmp_path: Path) -> None:
    """docs/operations.md's overlay for other CNI directories: the ConfigMap and the
    DaemonSet's read-write volumes move together."""
    overlay = tmp_path / "cni-dirs"
    overlay.mkdir()
    base = os.path.relpath(cluster_manifests.DEPLOY_DIR / "base", overlay)
    text = documented_block("CNI directories elsewhere").replace("../../base", base)
    (overlay / "kustomization.yaml").write_text(text)
    docs = cluster_manifests.render(str(overlay))
    [config] = [d["data"] for d in docs if d["kind"] == "ConfigMap"]
    assert config["cniConfDir"] == "/etc/kubernetes/cni/net.d"
    assert config["cniBinDir"] == "/home/kubernetes/bin"
    assert_mounts_follow(daemonset(docs)["spec"]["template"]["spec"], config)


@pytest.mark.parametrize("overlay", ["base", "overlays/dev", "overlays/prod"])
def test_the_metrics_port_is_one_value(overlay: str) -> None:
    [daemon] = daemonset(cluster_manifests.render(overlay))["spec"]["template"]["spec"][
        "containers"
    ]
    [port] = daemon["ports"]
    assert port == {"name": "metrics", "containerPort": 9190, "protocol": "TCP"}
    env = {e["name"]: e.get("value") for e in daemon["env"]}
    assert env["BRAID_METRICS_PORT"] == str(port["containerPort"])
    assert "--metrics-address=$(BRAID_NODE_IP):$(BRAID_METRICS_PORT)" in daemon["command"]


def test_an_overlay_changes_the_metrics_port_as_documented(tmp_path: Path) -> None:
    """docs/operations.md's overlay for another port: the port and the daemon's address move
    together."""
    overlay = tmp_path / "port"
    overlay.mkdir()
    base = os.path.relpath(cluster_manifests.DEPLOY_DIR / "base", overlay)
    text = documented_block("another metrics port").replace("../../base", base)
    (overlay / "kustomization.yaml").write_text(text)
    [daemon] = daemonset(cluster_manifests.render(str(overlay)))["spec"]["template"]["spec"][
        "containers"
    ]
    assert [p["containerPort"] for p in daemon["ports"]] == [9390]
    assert {"name": "BRAID_METRICS_PORT", "value": "9390"} in daemon["env"]


@pytest.mark.parametrize(
    ("overlay", "image", "pull"),
    [
        # A name that never resolves (RFC 2606) until an overlay names the image you pushed.
        ("base", f"{PLACEHOLDER_IMAGE}:{package_version()}", None),
        ("overlays/dev", "braid:dev", "Never"),
        ("overlays/prod", f"{PLACEHOLDER_IMAGE}:{package_version()}", None),
    ],
)
def test_overlays_set_the_image(overlay: str, image: str, pull: str | None) -> None:
    spec = daemonset(cluster_manifests.render(overlay))["spec"]["template"]["spec"]
    for container in spec["initContainers"] + spec["containers"]:
        assert container["image"] == image
        assert container.get("imagePullPolicy") == pull


def test_the_monitoring_service_selects_the_daemonsets_metrics_port() -> None:
    [service] = cluster_manifests.render("monitoring")
    pod = daemonset(cluster_manifests.render("base"))["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_dev_overlay_logs_at_debug() -> None:
    [config] = [d for d in cluster_manifests.render("overlays/dev") if d["kind"] == "ConfigMap"]
    assert '"logLevel": "debug"' in config["data"]["braid.conf"]


@pytest.mark.parametrize("overlay", ["base", "overlays/dev", "overlays/prod"])
def test_the_configuration_is_one_braid_accepts_without_warnings(overlay: str) -> None:
    [config] = [d for d in cluster_manifests.render(overlay) if d["kind"] == "ConfigMap"]
    loaded = load_braid_config(config["data"]["braid.conf"].encode())
    assert loaded.warnings == ()
    assert loaded.config.type == "braid"
    assert loaded.config.daemon_socket_dir == "/run/braid"  # where the shim looks
    assert not loaded.config.cluster_network, "each node's own default network applies"
    assert "daemonMetricsAddress" not in loaded.keys, "the DaemonSet binds the node's address"
