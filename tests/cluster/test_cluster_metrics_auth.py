"""`daemonMetricsAuth: kubernetes` against the real API server: a real daemon with braid's
identity and deploy/components/metrics-auth's RBAC answers a ServiceAccount bound to
braid-metrics-reader with its metrics, one without the binding 403, garbage and no token 401;
answers are kept (a second scrape makes no review) and the health endpoint asks for nothing.
Without the component's rights every scrape is 503."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cluster_manifests
import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import node
from test_daemon_k8s_reads import K8sDaemon, free_port, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
TOKEN_REVIEWS = where(method="POST", path="/tokenreviews")


def get(port: int, path: str, token: str | None = None) -> tuple[int, bytes, bytes]:
    """Status, head and body of a GET of ``path`` on 127.0.0.1:``port``."""
    header = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: braid\r\n{header}\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head, body


def delete_rbac(admin: kubernetes.client.ApiClient, doc: dict[str, Any]) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(admin)
    name = doc["metadata"]["name"]
    try:
        if doc["kind"] == "ClusterRole":
            rbac.delete_cluster_role(name)
        else:
            rbac.delete_cluster_role_binding(name)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def metrics_rbac(kube_admin: kubernetes.client.ApiClient) -> Iterator[list[dict[str, Any]]]:
    """deploy/components/metrics-auth's objects, created for the test and removed after."""
    docs = cluster_manifests.render("components/metrics-auth")
    try:
        for doc in docs:
            cluster_manifests.create(kube_admin, doc)
        yield docs
    finally:
        for doc in docs:
            delete_rbac(kube_admin, doc)


def scraper(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> str:
    """A ServiceAccount of the test's namespace and a 10-minute token of it."""
    core = kubernetes.client.CoreV1Api(admin)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    request = {"spec": {"audiences": [], "expirationSeconds": 600}}
    answer = core.create_namespaced_service_account_token(name, namespace, request)
    return str(answer.status.token)


@pytest.fixture
def scrapers(
    kube_admin: kubernetes.client.ApiClient, kube_namespace: str, metrics_rbac: object
) -> Iterator[dict[str, str]]:
    """Tokens of `reader` (bound to braid-metrics-reader) and `stranger` (bound to nothing)."""
    binding = f"t-{uuid.uuid4().hex[:8]}-reader"
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_admin)
    body = {
        "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "braid-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": kube_namespace}],
    }  # fmt: skip
    rbac.create_cluster_role_binding(body)
    try:
        yield {name: scraper(kube_admin, kube_namespace, name) for name in ("reader", "stranger")}
    finally:
        rbac.delete_cluster_role_binding(binding)


def test_only_a_reader_gets_the_metrics_and_the_probes_ask_nothing(
    k8s_daemon: K8sDaemon, scrapers: dict[str, str], fault_proxy: faultproxy.FaultProxy
) -> None:
    health = free_port()
    k8s_daemon.start("--health-address", f"127.0.0.1:{health}", daemonMetricsAuth="kubernetes")
    port = k8s_daemon.metrics_port
    reviews = len(fault_proxy.requests(TOKEN_REVIEWS))

    status, _, body = get(port, "/metrics", scrapers["reader"])
    assert status == 200, (body, k8s_daemon.log_text())
    assert b"braid_build_info" in body
    assert get(port, "/metrics", scrapers["stranger"])[0] == 403
    status, head, _ = get(port, "/metrics", "garbage.not-a-token")
    assert status == 401
    assert b'WWW-Authenticate: Bearer realm="braid"' in head
    assert get(port, "/metrics")[0] == 401
    reviewed = len(fault_proxy.requests(TOKEN_REVIEWS))
    assert reviewed - reviews == 3  # reader, stranger, garbage: one TokenReview each

    # Kept: the same tokens again make no review.
    assert get(port, "/metrics", scrapers["reader"])[0] == 200
    assert get(port, "/metrics", scrapers["stranger"])[0] == 403
    assert len(fault_proxy.requests(TOKEN_REVIEWS)) == reviewed

    body = get(port, "/metrics", scrapers["reader"])[2].decode()
    for outcome, count in (("allowed", 3), ("forbidden", 2), ("unauthenticated", 2)):
        assert f'braid_daemon_metrics_auth_total{{outcome="{outcome}"}} {count}.0' in body

    # The health endpoint, on loopback, answers the probes without a token.
    assert wait_until(lambda: get(health, "/readyz")[0] == 200), k8s_daemon.log_text()
    assert get(health, "/healthz")[2] == b"ok\n"
    assert get(health, "/metrics")[0] == 404


def test_a_flood_of_distinct_tokens_is_held_to_the_review_rate(
    k8s_daemon: K8sDaemon, scrapers: dict[str, str], fault_proxy: faultproxy.FaultProxy
) -> None:
    k8s_daemon.start(daemonMetricsAuth="kubernetes")
    port = k8s_daemon.metrics_port
    assert get(port, "/metrics", scrapers["reader"])[0] == 200  # kept from here on
    before, started = len(fault_proxy.requests(TOKEN_REVIEWS)), time.monotonic()
    statuses = [get(port, "/metrics", f"flood-{n}")[0] for n in range(300)]
    elapsed = time.monotonic() - started
    reviews = len(fault_proxy.requests(TOKEN_REVIEWS)) - before
    # The bucket: 20 at once, then 5 a second (one review each: the tokens are unknown).
    assert reviews <= 20 + 5 * elapsed + 1, (reviews, elapsed)
    assert set(statuses) == {401, 429}
    assert statuses.count(429) >= 300 - reviews
    assert get(port, "/metrics", scrapers["reader"])[0] == 200  # a kept answer is not held back


def test_without_the_review_rights_every_scrape_is_503_and_the_log_says_why(
    k8s_daemon: K8sDaemon,
    scrapers: dict[str, str],
    kube_admin: kubernetes.client.ApiClient,
) -> None:
    kubernetes.client.RbacAuthorizationV1Api(kube_admin).delete_cluster_role_binding(
        "braid-metrics-auth"
    )
    k8s_daemon.start(daemonMetricsAuth="kubernetes")
    assert wait_until(
        lambda: get(k8s_daemon.metrics_port, "/metrics", scrapers["reader"])[0] == 503
    )
    assert "cannot review a token" in k8s_daemon.log_text()


def test_kubernetes_auth_without_an_api_client_refuses_to_start(tmp_path: Path) -> None:
    """A daemon on the file store (no kubeconfig, not in a pod) has no one to ask."""
    config = tmp_path / "braid.conf"
    config.write_text('{"type": "braid", "daemonMetricsAuth": "kubernetes"}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.daemon", "--config", str(config),
         "--socket-dir", str(tmp_path / "run"), "--metrics-address", "127.0.0.1:0",
         "--health-address", ""],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "daemonMetricsAuth is 'kubernetes'" in done.stderr
    assert not (tmp_path / "run" / "braid.sock").exists()
