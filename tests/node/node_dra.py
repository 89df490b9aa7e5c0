"""The node tier's test DRA driver (`dra-driver/`, built by `hack/node/dra-driver.sh` into
`.cache/dra-driver/bin`): a kubelet plugin on the k8s.io/dynamic-resource-allocation helper.

`DraDriver` runs it as a process of the node, as a DaemonSet's pod would run it: with the
kubelet root-dir's `plugins_registry` and `plugins/<driver>`, and the credentials of its own
ServiceAccount (`kube-system/braid-test-dra-driver`, a token from the TokenRequest API) bound
to a ClusterRole with what the helper needs (ResourceSlices, ResourceClaims and their status,
Nodes). It offers the host interfaces it is given as the devices of one ResourceSlice, each
with the attributes `k8s.cni.cncf.io/resourceName` and `k8s.cni.cncf.io/deviceID`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import node_cluster
import pytest
from node_cluster import Node

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("BRAID_DRA_DRIVER_BIN_DIR", REPO / ".cache" / "dra-driver" / "bin"))
PROGRAM = BIN_DIR / "braid-test-dra-driver"
DRIVER = "dra.braid-test.example"
RESOURCE = "braid-test.example/dranet"
DEVICE_CLASS = "braid-test-dranet"
EXTENDED_DEVICE_CLASS = "braid-test-dranet-extended"
ACCOUNT = "braid-test-dra-driver"
ACCOUNT_NAMESPACE = "kube-system"
ATTR_DOMAIN = "k8s.cni.cncf.io"


def rbac() -> list[dict[str, Any]]:
    """The driver's ServiceAccount, ClusterRole and binding."""
    rules = [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete",
                   "deletecollection"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    ]  # fmt: skip
    meta = {"name": ACCOUNT}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {**meta, "namespace": ACCOUNT_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
         "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT,
                       "namespace": ACCOUNT_NAMESPACE}]},
    ]  # fmt: skip


def device_class() -> dict[str, Any]:
    """The DeviceClass of the driver's network devices of RESOURCE."""
    expression = (
        f'device.driver == "{DRIVER}" && '
        f'device.attributes["{ATTR_DOMAIN}"].resourceName == "{RESOURCE}"'
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def extended_device_class() -> dict[str, Any]:
    """A DeviceClass of the same devices that serves them as extended resource RESOURCE
    (`spec.extendedResourceName`; DRAExtendedResource, alpha in Kubernetes 1.34)."""
    found = device_class()
    found["metadata"]["name"] = EXTENDED_DEVICE_CLASS
    found["spec"]["extendedResourceName"] = RESOURCE
    return found


def claim_template(namespace: str, name: str, count: int) -> dict[str, Any]:
    """A ResourceClaimTemplate of `count` devices of DEVICE_CLASS (one request, `nics`)."""
    request = {"deviceClassName": DEVICE_CLASS, "allocationMode": "ExactCount", "count": count}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "nics", "exactly": request}]}}},
    }


class DraDriver:
    """The driver running on `node`, offering `interfaces`; `start()`, `stop()`, `slices()`,
    `registered()`, `log()`."""

    def __init__(self, node: Node, interfaces: list[str]) -> None:
        self.node = node
        self.interfaces = interfaces
        self.kubeconfig = node.root / f"{ACCOUNT}.kubeconfig"
        self.component = node_cluster.Component(
            "dra-driver", self.argv(), node.log_dir / "dra-driver.log"
        )

    def argv(self) -> list[str]:
        return [
            str(PROGRAM), f"--driver-name={DRIVER}", f"--resource-name={RESOURCE}",
            f"--node-name={self.node.node_name}", f"--kubeconfig={self.kubeconfig}",
            f"--kubelet-root-dir={self.node.kubelet_root_dir}", "--v=2", *self.interfaces,
        ]  # fmt: skip

    def start(self) -> None:
        """Starts the driver with fresh credentials; returns once kubelet registered it and
        its ResourceSlice lists every interface."""
        if not PROGRAM.is_file():
            pytest.fail(
                f"node tier: {PROGRAM} is missing: run `make dra-driver` (hack/node/dra-driver.sh)",
                pytrace=False,
            )
        self.node.apply(rbac())
        self.write_kubeconfig()
        # In the node's components: its log joins the diagnostics and the kept logs, and the
        # node's teardown names it if it is still running.
        self.node.components["dra-driver"] = self.component
        self.component.start()
        self.node.wait_for("kubelet registering the DRA driver", self.registered, timeout=60)
        self.node.wait_for(
            f"the DRA driver's ResourceSlice with {len(self.interfaces)} devices",
            lambda: (
                sorted(d["name"] for s in self.slices() for d in s["spec"]["devices"])
                == sorted(self.interfaces)
            ),
            timeout=60,
        )

    def write_kubeconfig(self) -> None:
        token = self.node.kubectl(
            "create", "token", ACCOUNT, "-n", ACCOUNT_NAMESPACE, "--duration=2h"
        ).stdout.strip()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "node", "cluster": {
                "server": self.node.api_url, "certificate-authority": str(self.node.ca_file)}}],
            "users": [{"name": ACCOUNT, "user": {"token": token}}],
            "contexts": [{"name": ACCOUNT, "context": {"cluster": "node", "user": ACCOUNT}}],
            "current-context": ACCOUNT,
        }  # fmt: skip
        self.kubeconfig.write_text(json.dumps(config))
        self.kubeconfig.chmod(0o600)

    def registered(self) -> bool:
        self.component.check()
        return "registered with kubelet" in self.log()

    def registrations(self) -> int:
        """How often kubelet accepted the driver (the helper logs each notification)."""
        accepted = 'NotifyRegistrationStatus" request="plugin_registered:true"'
        return sum(accepted in line for line in self.log().splitlines())

    def log(self) -> str:
        path = self.component.log_path
        return path.read_text(errors="replace") if path.exists() else ""

    def logged(self, message: str, values: str) -> bool:
        """Whether the driver logged `message` with `values` (its last key-value pairs)."""
        return any(
            f'] "{message}" ' in line and line.endswith(f" {values}")
            for line in self.log().splitlines()
        )

    def slices(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.node.kubectl_json(
            "get", "resourceslices", f"--field-selector=spec.driver={DRIVER}"
        )["items"]
        return found

    def stop(self) -> None:
        """Stops the driver (SIGTERM: it removes its sockets), then removes its
        ResourceSlices (a driver that goes away leaves them to kubelet, which takes its time)
        and its RBAC objects. Raises if it did not exit cleanly."""
        proc = self.component.proc
        status = None
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                status = proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
            self.component.proc = None
        self.node.kubectl("delete", "resourceslices", f"--field-selector=spec.driver={DRIVER}")
        self.node.wait_for("the DRA driver's ResourceSlices removed", lambda: not self.slices())
        for obj in rbac():
            kind, name = obj["kind"].lower(), obj["metadata"]["name"]
            namespace = obj["metadata"].get("namespace")
            self.node.kubectl("delete", kind, name, *(["-n", namespace] if namespace else []),
                              "--ignore-not-found")  # fmt: skip
        self.kubeconfig.unlink(missing_ok=True)
        assert status in (0, None), f"the DRA driver exited with {status}"
