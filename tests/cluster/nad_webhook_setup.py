"""The NAD webhook component (deploy/components/nad-webhook) on the cluster tier's API server.

The component is rendered with the real kustomize and applied with kubectl as the operator
would, less what needs a node (the Deployment, its budget and Service: no scheduler runs
here). The API server reaches the webhook, a `braidctl nad-webhook` process on 127.0.0.1, by a
`url:` clientConfig in place of the Service; the process runs as the component's
ServiceAccount (a TokenRequest token), so its RBAC is what it has.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apiserver
import cluster_manifests
import kubernetes.client
from apiserver import free_port

from braid.commands.validate_findings import Finding, Findings
from braid.commands.validate_objects import check_object

NAMESPACE = "braid-system"
SECRET = "braid-nad-webhook-certs"
CONFIGURATION = "braid-nad-webhook"
ACCOUNT = "braid-nad-webhook"
NEEDS_A_NODE = {"Deployment", "PodDisruptionBudget", "Service"}
BRAIDCTL = Path(sys.executable).parent / "braidctl"
GOOD_CONFIG = '{"cniVersion": "1.0.0", "type": "macvlan", "master": "eth0", "mode": "bridge"}'
# Three problems validate reports, all of them: a version braid cannot answer, an `ipam` that is
# no object, and (in its own check of the list) the same.
BAD_CONFIG = '{"cniVersion": "9.9.9", "name": "n", "type": "macvlan", "ipam": "none"}'


def nad(namespace: str, name: str, config: str) -> dict[str, Any]:
    """A NetworkAttachmentDefinition object of `config`."""
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"config": config},
    }


def validate_messages(doc: dict[str, Any]) -> list[str]:
    """What `braidctl validate` says of `doc` (its checker of each object of a file), naming
    the object as the API server's answer does where validate names the file."""
    where = f"NetworkAttachmentDefinition {doc['metadata']['namespace']}/{doc['metadata']['name']}"
    found: list[Finding] = []
    check_object(doc, where, Findings(where, found), None)
    return [f["message"] for f in found if f["severity"] == "error"]


def component_docs(port: int, failure_policy: str = "Ignore") -> list[dict[str, Any]]:
    """The component's objects, the webhook called at https://127.0.0.1:`port`/validate."""
    docs = [d for d in cluster_manifests.render("components/nad-webhook")
            if d["kind"] not in NEEDS_A_NODE]  # fmt: skip
    for doc in docs:
        if doc["kind"] == "ValidatingWebhookConfiguration":
            hook = doc["webhooks"][0]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}/validate"}
            hook["failurePolicy"] = failure_policy
    return docs


def kubectl(kubeconfig: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cluster_manifests.kubectl()), f"--kubeconfig={kubeconfig}", *args],
        input=stdin, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


def apply(kubeconfig: Path, docs: list[dict[str, Any]]) -> None:
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    done = kubectl(kubeconfig, "apply", "-f", "-", stdin=listed)
    assert done.returncode == 0, done.stderr


def delete(kubeconfig: Path, docs: list[dict[str, Any]]) -> None:
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    kubectl(kubeconfig, "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=listed)


def account_token(admin: kubernetes.client.ApiClient) -> str:
    spec = kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    request = kubernetes.client.AuthenticationV1TokenRequest(spec=spec)
    core = kubernetes.client.CoreV1Api(admin)
    return str(
        core.create_namespaced_service_account_token(ACCOUNT, NAMESPACE, request).status.token
    )


class Replica:
    """One `braidctl nad-webhook` process on 127.0.0.1:`port`."""

    def __init__(self, kubeconfig: Path, port: int, log: Path, *flags: str) -> None:
        self.port = port
        self.log = log
        argv = [str(BRAIDCTL), "nad-webhook", f"--kubeconfig={kubeconfig}",
                f"--namespace={NAMESPACE}", f"--listen=127.0.0.1:{port}",
                "--host=127.0.0.1", *flags]  # fmt: skip
        with log.open("ab") as out:
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def peer_certificate(self) -> bytes | None:
        """The DER certificate the replica serves now (None: it serves none yet)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with (
                socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw,
                context.wrap_socket(raw) as tls,
            ):
                return tls.getpeercert(binary_form=True)
        except OSError:
            return None

    def wait_serving(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            if self.peer_certificate() is not None:
                return
            time.sleep(0.1)
        raise AssertionError(f"the webhook serves nothing after {timeout} s:\n"
                             f"{self.log.read_text()[-3000:]}")  # fmt: skip

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def installed(
    server: apiserver.ApiServer, workdir: Path, failure_policy: str = "Ignore"
) -> Iterator[tuple[Path, int, list[dict[str, Any]]]]:
    """The component applied (the webhook at a free port); yields (the webhook's kubeconfig,
    the port, the objects) and deletes them after."""
    admin_config = server.kubeconfig("admin", workdir / "admin.kubeconfig")
    port = free_port()
    docs = component_docs(port, failure_policy)
    apply(admin_config, docs)
    try:
        with server.api_client("admin") as admin:
            token = account_token(admin)
        path = server.kubeconfig("nobody", workdir / "webhook.kubeconfig", token=token)
        yield path, port, docs
    finally:
        delete(admin_config, docs)
