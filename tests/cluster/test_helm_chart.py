"""braid's Helm chart (deploy/helm/braid), rendered by the Helm of `make helm-bin`: with its
default values it renders exactly deploy/base's objects (kustomize's rendering, object by object
and field by field, Helm's own labels aside); each toggle renders the component or monitoring
objects of deploy/ it stands for; `helm lint` passes; values.yaml and values.schema.json offer
every key of braid.conf with its type; bad values are refused with Helm's message; and what it
renders is accepted by a real API server (server-side dry run)."""

from __future__ import annotations

import json
import os
import re
import typing
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

import cluster_helm
import cluster_manifests
import kubernetes.client
import pytest
import yaml

from braid.config import schema as config_schema
from braid.config.keys import LAYERED

DEPLOY = cluster_manifests.DEPLOY_DIR
VALUES = cluster_helm.CHART / "values.yaml"
SCHEMA = json.loads((cluster_helm.CHART / "values.schema.json").read_text())
READER = {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
# Every toggle on, braid in a namespace of its own choosing.
EVERYTHING = {
    "namespace.name": "braid-alt",
    "admissionPolicy.enabled": True,
    "metricsAuth.enabled": True,
    "metricsAuth.readers": [READER],
    "braidThin.enabled": True,
    "monitoring.service.enabled": True,
    "monitoring.podMonitor.enabled": True,
    "monitoring.serviceMonitor.enabled": True,
    "nadWebhook.enabled": True,
}


def everything_with_kustomize(directory: Path) -> list[dict[str, Any]]:
    """deploy/base with the four components and deploy/monitoring's objects, moved to
    braid-alt by kustomize, as an overlay of an operator's would."""
    where = [
        "base", "monitoring", "monitoring/podmonitor.yaml",
        "monitoring/servicemonitor-auth.yaml", "monitoring/reader-binding.yaml",
    ]  # fmt: skip
    components = ["admission-policy", "metrics-auth", "braid-thin", "nad-webhook"]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": "braid-alt",
        "resources": [os.path.relpath(DEPLOY / w, directory) for w in where],
        "components": [os.path.relpath(DEPLOY / "components" / c, directory) for c in components],
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "braid"}}],
    }
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization))
    return cluster_helm.kustomize(directory)


def test_default_values_render_deploy_base() -> None:
    chart = cluster_helm.template()
    assert cluster_helm.compare(chart, cluster_manifests.render("base")) == []
    assert len(chart) == 7, [cluster_helm.key(d) for d in chart]


def test_every_toggle_renders_its_component_of_deploy(tmp_path: Path) -> None:
    chart = cluster_helm.template(EVERYTHING)
    assert cluster_helm.compare(chart, everything_with_kustomize(tmp_path)) == []
    kinds = {d["kind"] for d in chart}
    assert {"ValidatingAdmissionPolicy", "PodMonitor", "ServiceMonitor", "Role"} <= kinds
    assert {"ValidatingWebhookConfiguration", "Deployment", "PodDisruptionBudget"} <= kinds


def test_the_nad_webhook_takes_the_charts_image_and_its_failure_policy() -> None:
    values = {
        **EVERYTHING, "image.repository": "registry.test/braid", "image.tag": "9.9.9",
        "image.pullPolicy": "Never", "imagePullSecrets": [{"name": "pull"}],
        "nadWebhook.failurePolicy": "Fail", "nadWebhook.policy.enabled": False,
    }  # fmt: skip
    docs = {(d["kind"], d["metadata"]["name"]): d for d in cluster_helm.template(values)}
    pod = docs["Deployment", "braid-nad-webhook"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert (container["image"], container["imagePullPolicy"]) == (
        "registry.test/braid:9.9.9",
        "Never",
    )
    assert pod["imagePullSecrets"] == [{"name": "pull"}]
    [webhook] = docs["ValidatingWebhookConfiguration", "braid-nad-webhook"]["webhooks"]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["clientConfig"]["service"]["namespace"] == "braid-alt"
    assert ("ValidatingAdmissionPolicy", "braid-nad-checks") not in docs
    assert ("ValidatingAdmissionPolicy", "braid-network-status-only") in docs


def test_the_comparison_sees_a_changed_field_and_a_missing_object() -> None:
    base = cluster_manifests.render("base")
    chart = cluster_helm.template({"config.logLevel": "debug", "braidThin.enabled": True})
    found = cluster_helm.compare(chart, base)
    assert any(".data.braid.conf.logLevel: 'debug' != 'error'" in line for line in found), found
    assert any("ServiceAccount', 'braid-alt'" in line or "'braid-thin')" in line
               for line in found), found  # fmt: skip


def test_values_reach_the_daemonset_and_configmap() -> None:
    values = {
        "image.repository": "registry.test/braid", "image.tag": "9.9.9",
        "image.pullPolicy": "Never", "cniConfDir": "/etc/kubernetes/cni/net.d",
        "cniBinDir": "/usr/libexec/cni", "metricsPort": 9300,
        "config.maxSelections": 8, "config.hotPlug": "annotated",
        "daemon.resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        "tolerations": [{"key": "only", "operator": "Exists"}],
        "nodeSelector": {"braid": "yes"},
        "daemon.extraEnv": [{"name": "KUBERNETES_SERVICE_HOST", "value": "10.0.0.1"}],
    }  # fmt: skip
    docs = {d["kind"]: d for d in cluster_helm.template(values)}
    pod = docs["DaemonSet"]["spec"]["template"]["spec"]
    install, daemon = pod["initContainers"][0], pod["containers"][0]
    for container in (install, daemon):
        assert container["image"] == "registry.test/braid:9.9.9"
        assert container["imagePullPolicy"] == "Never"
    paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert (paths["cni-conf"], paths["cni-bin"]) == (
        "/etc/kubernetes/cni/net.d",
        "/usr/libexec/cni",
    )
    mounts = {m["name"]: m["mountPath"] for m in daemon["volumeMounts"]}
    assert mounts["cni-conf"] == "/hostroot/etc/kubernetes/cni/net.d"
    assert install["volumeMounts"] == [
        {"name": "cni-bin", "mountPath": "/hostroot/usr/libexec/cni"}
    ]
    env = {e["name"]: e.get("value") for e in daemon["env"]}
    assert (env["BRAID_METRICS_PORT"], env["KUBERNETES_SERVICE_HOST"]) == ("9300", "10.0.0.1")
    assert daemon["ports"] == [{"name": "metrics", "containerPort": 9300, "protocol": "TCP"}]
    # Helm merges maps: the default limit stays.
    assert daemon["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "384Mi"}
    }  # fmt: skip
    assert pod["tolerations"] == [{"key": "only", "operator": "Exists"}]
    assert pod["nodeSelector"] == {"braid": "yes", "kubernetes.io/os": "linux"}
    data = docs["ConfigMap"]["data"]
    conf = json.loads(data["braid.conf"])
    assert (conf["maxSelections"], conf["hotPlug"], conf["type"]) == (8, "annotated", "braid")
    assert (data["cniConfDir"], data["cniBinDir"]) == (
        "/etc/kubernetes/cni/net.d",
        "/usr/libexec/cni",
    )
    digest = "sha256:" + "ab" * 32
    docs = {d["kind"]: d for d in cluster_helm.template({"image.digest": digest})}
    image = docs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"registry.example/braid-cni/braid@{digest}"


def test_helm_lint_passes_with_the_defaults_and_every_toggle() -> None:
    cluster_helm.helm("lint", "--strict", cluster_helm.CHART)
    cluster_helm.helm("lint", "--strict", cluster_helm.CHART, *cluster_helm.value_args(EVERYTHING))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config.maxSelectons": 3}, "additional properties 'maxSelectons' not allowed"),
        ({"config.logLevel": "loud"}, "value must be one of 'debug', 'verbose', 'error', 'panic'"),
        ({"config.maxSelections": "many"}, "got string, want integer"),
        ({"cniBinDir": "opt/cni/bin"}, "/cniBinDir"),
        ({"image.pullPolicy": "Sometimes"}, "/image/pullPolicy"),
        ({"config.daemonMetricsAuth": "kubernetes"}, "set metricsAuth.enabled=true too"),
        ({"config.thinKubeconfig": "/etc/cni/net.d/braid.d/k"}, "set braidThin.enabled=true too"),
    ],
)
def test_bad_values_are_refused_with_what_is_wrong(values: dict[str, Any], message: str) -> None:
    done = cluster_helm.helm(
        "template", "braid", cluster_helm.CHART, *cluster_helm.value_args(values), check=False
    )  # fmt: skip
    assert done.returncode != 0
    assert message in done.stderr, done.stderr
    assert done.stdout == ""


def _json_types(kind: Any) -> set[str]:
    """The JSON Schema types a braid.conf key of Python type `kind` takes."""
    if typing.get_origin(kind) is typing.Annotated:
        return _json_types(typing.get_args(kind)[0])
    if typing.get_origin(kind) in (typing.Union, UnionType):
        return set().union(*(_json_types(a) for a in typing.get_args(kind)))
    if typing.get_origin(kind) is tuple:
        return {"array"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string", NoneType: "null"}
    return {simple.get(kind, "object")}


def test_values_offer_every_key_of_braid_conf_with_its_type() -> None:
    properties = SCHEMA["properties"]["config"]["properties"]
    text = VALUES.read_text()
    for key in LAYERED:
        declared = properties.get(key.key)
        assert declared, f"values.schema.json: config.{key.key} missing"
        types = declared["type"] if isinstance(declared["type"], list) else [declared["type"]]
        assert set(types) == _json_types(key.type), key.key
        assert re.search(rf"^  (# )?{re.escape(key.key)}:", text, re.MULTILINE), (
            f"values.yaml: config.{key.key} neither set nor listed"
        )
    assert set(properties) <= config_schema.KNOWN_KEYS
    enums = {
        "logLevel": config_schema.LOG_LEVELS, "hotPlug": config_schema.HOT_PLUG_MODES,
        "networkStatusKeys": config_schema.KEY_SETS, "events": config_schema.EVENT_LEVELS,
        "statusWritePolicy": config_schema.STATUS_WRITE_POLICIES,
        "daemonMetricsAuth": config_schema.METRICS_AUTH_MODES,
    }  # fmt: skip
    for name, allowed in enums.items():
        assert set(properties[name]["enum"]) == set(allowed), name
    # The defaults of values.yaml are what it renders: deploy/base's braid.conf.
    defaults = yaml.safe_load(text)["config"]
    base = {d["kind"]: d for d in cluster_manifests.render("base")}
    assert defaults == json.loads(base["ConfigMap"]["data"]["braid.conf"])


def test_the_api_server_accepts_every_object_the_chart_renders(
    kube_admin: kubernetes.client.ApiClient,
) -> None:
    """Server-side dry run of every object (the Prometheus Operator's kinds aside: this API
    server does not serve them), in a namespace of the test's own (created for real)."""
    namespace = "braid-helm-dry-run"
    values = {**EVERYTHING, "namespace.name": namespace}
    docs = cluster_helm.template(values, release="dry-run")
    made = [d for d in docs if d["kind"] == "Namespace"]
    assert len(made) == 1
    cluster_manifests.create(kube_admin, made[0])
    served = [
        d for d in docs
        if d["kind"] != "Namespace" and not d["apiVersion"].startswith("monitoring.coreos.com/")
    ]  # fmt: skip
    assert len(served) == len(docs) - 3
    for doc in served:
        applied = cluster_manifests.server_side_apply(kube_admin, doc, dry_run=True)
        labels = applied["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "braid"
        # The CRD comes from the chart's crds/, which Helm does not template.
        if doc["kind"] != "CustomResourceDefinition":
            assert labels["app.kubernetes.io/instance"] == "dry-run"


def test_the_charts_app_version_is_braids_version() -> None:
    chart = yaml.safe_load((cluster_helm.CHART / "Chart.yaml").read_text())
    cargo = (cluster_manifests.REPO_ROOT / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', cargo, re.MULTILINE)
    assert version, "Cargo.toml: no workspace version"
    assert chart["appVersion"] == chart["version"] == version.group(1)
