"""braid's Helm chart (deploy/helm/braid) rendered with the Helm of `make helm-bin`, and what it
renders put side by side with kustomize's rendering of deploy/ (`kubectl kustomize`).

Shared by the cluster tier (the chart checked against deploy/ and the API server) and the node
tier (the chart installed, upgraded and uninstalled on the node).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from apiserver import REPO_ROOT, ApiServerError
from cluster_manifests import kubectl

CHART = REPO_ROOT / "deploy" / "helm" / "braid"
HELM_BIN_DIR = Path(os.environ.get("BRAID_HELM_BIN_DIR", REPO_ROOT / ".cache" / "helm" / "bin"))
# The labels Helm's conventions add to every object, which deploy/ has no reason to set.
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance")
Key = tuple[str, str, str, str]
# Kinds without a namespace: kustomize's `namespace:` sets one on those it does not know
# (ValidatingAdmissionPolicy and its binding), which the API server ignores.
CLUSTER_SCOPED = frozenset({
    "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
})  # fmt: skip


def helm_binary() -> Path:
    binary = HELM_BIN_DIR / "helm"
    if not binary.is_file():
        raise ApiServerError(f"no {binary}: build it with `make helm-bin` (hack/helm/build.sh)")
    return binary


def helm(
    *args: str | Path, check: bool = True, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`helm ARGS...` (with `env` added to the environment); with `check`, a failure raises
    with Helm's own words."""
    done = subprocess.run(
        [helm_binary(), *map(str, args)], capture_output=True, text=True, check=False,
        timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip
    if check and done.returncode != 0:
        raise ApiServerError(f"helm {' '.join(map(str, args))} failed: {done.stderr.strip()}")
    return done


def value_args(values: dict[str, Any]) -> list[str]:
    """`--set-json KEY=JSON` for each of `values` (dotted keys, as `--set` takes them)."""
    args = []
    for key, value in values.items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    return args


def template(
    values: dict[str, Any] | None = None, *, release: str = "braid"
) -> list[dict[str, Any]]:
    """The documents `helm template` renders from the chart, its CRD included."""
    done = helm(
        "template", release, CHART, "--include-crds", *value_args(values or {})
    )  # fmt: skip
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def key(doc: dict[str, Any]) -> Key:
    meta = doc["metadata"]
    return (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])


def normalised(docs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Each object by its (apiVersion, kind, namespace, name), without Helm's own labels, and
    with braid.conf parsed (its JSON text is laid out differently, its content is compared)."""
    found: dict[Key, dict[str, Any]] = {}
    for original in docs:
        doc = json.loads(json.dumps(original))  # a deep copy
        if doc["kind"] in CLUSTER_SCOPED:
            doc["metadata"].pop("namespace", None)
        labels = doc["metadata"].get("labels", {})
        for label in HELM_LABELS:
            labels.pop(label, None)
        if doc["kind"] == "ConfigMap" and "braid.conf" in doc.get("data", {}):
            doc["data"]["braid.conf"] = json.loads(doc["data"]["braid.conf"])
        if doc["kind"] == "ValidatingAdmissionPolicy":
            _squeeze_expressions(doc)
        assert key(doc) not in found, f"{key(doc)} twice"
        found[key(doc)] = doc
    return found


def _squeeze_expressions(node: Any) -> None:
    """Runs of white space in CEL expressions made one space: CEL ignores them, and kustomize
    writes a folded (`>-`) expression whose lines are more indented with a blank line more
    than YAML's reading of it (which Helm keeps)."""
    if isinstance(node, list):
        for item in node:
            _squeeze_expressions(item)
    elif isinstance(node, dict):
        for name, value in node.items():
            if name in {"expression", "messageExpression"} and isinstance(value, str):
                node[name] = " ".join(value.split())
            else:
                _squeeze_expressions(value)


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Where `left` and `right` differ, one line per field (`path: left != right`)."""
    if isinstance(left, dict) and isinstance(right, dict):
        out = []
        for name in sorted(set(left) | set(right), key=str):
            if name not in right:
                out.append(f"{path}.{name}: only in the chart's")
            elif name not in left:
                out.append(f"{path}.{name}: only in kustomize's")
            else:
                out += differences(left[name], right[name], f"{path}.{name}")
        return out
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        pairs = enumerate(zip(left, right, strict=True))
        return [line for i, (a, b) in pairs for line in differences(a, b, f"{path}[{i}]")]
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """The documents `kubectl kustomize` renders from `directory`, whose kustomization may
    name files of deploy/ outside it."""
    done = subprocess.run(
        [kubectl(), "kustomize", "--load-restrictor", "LoadRestrictionsNone", directory],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise ApiServerError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def compare(chart: list[dict[str, Any]], kustomize: list[dict[str, Any]]) -> list[str]:
    """Every difference between the chart's objects and kustomize's: objects one side lacks,
    and each field that differs."""
    ours, theirs = normalised(chart), normalised(kustomize)
    out = [f"{k}: only the chart renders it" for k in sorted(set(ours) - set(theirs))]
    out += [f"{k}: only kustomize renders it" for k in sorted(set(theirs) - set(ours))]
    for k in sorted(set(ours) & set(theirs)):
        out += [f"{k[1]} {k[3]}{line}" for line in differences(ours[k], theirs[k])]
    return out
