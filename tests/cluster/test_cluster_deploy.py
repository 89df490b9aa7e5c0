"""deploy/'s overlays render with the real kustomize and are accepted by the real API server
(server-side apply, dry run): schema, defaulting and admission, as `kubectl apply -k` would."""

from __future__ import annotations

from typing import Any

import cluster_manifests
import kubernetes.client
import pytest

from braid.config.schema import load_braid_config


def daemonset(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == "DaemonSet"]
    return found


@pytest.mark.parametrize("overlay", ["base", "overlays/dev", "overlays/prod"])
def test_every_object_is_accepted_by_the_server(
    kube_admin: kubernetes.client.ApiClient, overlay: str
) -> None:
    docs = cluster_manifests.render(overlay)
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        ["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
         "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
         "ConfigMap", "DaemonSet"]
    )  # fmt: skip
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
    [install] = spec["initContainers"]
    assert install["command"][:2] == ["braidctl", "install"]
    assert "--mode=none" in install["command"], "the daemon writes the configuration"
    [daemon] = spec["containers"]
    assert daemon["command"][:2] == ["braidctl", "daemon"]
    env = {e["name"]: e.get("value") for e in daemon["env"]}
    assert env["BRAID_HOST_ROOT"] == "/hostroot"
    assert env["BRAID_CNI_CONF_DIR"] == "/etc/cni/net.d"
    # The node file beside the shim the install container put there, kept by the daemon.
    assert env["BRAID_SHIM_DIR"] == "/opt/cni/bin"
    assert env["BRAID_CONFIG"] == "/etc/braid/braid.conf"
    assert "--metrics-address=$(BRAID_NODE_IP):9190" in daemon["command"]
    assert daemon["ports"] == [{"name": "metrics", "containerPort": 9190, "protocol": "TCP"}]
    # The probes ask the health endpoint on the node's loopback, apart from the metrics port
    # every pod of the node reaches.
    assert "--health-address=127.0.0.1:9191" in daemon["command"]
    health = {"host": "127.0.0.1", "port": 9191}
    assert daemon["readinessProbe"]["httpGet"] == {**health, "path": "/readyz"}
    assert daemon["livenessProbe"]["httpGet"] == {**health, "path": "/healthz"}
    assert "cpu" not in daemon["resources"]["limits"]
    mounts = {m["mountPath"]: m for m in daemon["volumeMounts"]}
    assert mounts["/hostroot"]["mountPropagation"] == "HostToContainer"
    host_paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert host_paths == {"/opt/cni/bin", "/"}


@pytest.mark.parametrize(
    ("overlay", "image", "pull"),
    [
        ("overlays/dev", "braid:dev", "Never"),
        ("overlays/prod", "registry.example/braid-cni/braid:0.1.0", None),
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
