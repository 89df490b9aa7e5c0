"""Cluster tier fixtures: a real kube-apiserver and etcd (session-wide) with deploy/base and its
admission-policy component applied, a fresh namespace per test, and a fault-injecting proxy in
front of the server.

The tier needs the binaries from `make kube-bins`; without them every test fails, loudly, with
that hint. Nothing here skips.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tier's own modules sit beside this file; with importlib mode they are importable only
# once their directory is on the path.
sys.path.insert(0, str(Path(__file__).parent))

import apiserver
import cluster_manifests
import faultproxy
import kubernetes.client


@pytest.fixture(scope="session")
def kube_apiserver() -> Iterator[apiserver.ApiServer]:
    """etcd + kube-apiserver on 127.0.0.1 with the NAD CRD and braid's RBAC (deploy/base)."""
    # A short path of our own: tmp_path_factory's can be long, and this one is removed at the end.
    workdir = Path(tempfile.mkdtemp(prefix="braid-kube-"))
    try:
        server = apiserver.start(workdir)
    except apiserver.ApiServerError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(f"cluster tier: {exc}", pytrace=False)
    try:
        with server.api_client() as admin:
            cluster_manifests.apply_base(admin)
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def kube_admin(kube_apiserver: apiserver.ApiServer) -> Iterator[kubernetes.client.ApiClient]:
    """An admin (`system:masters`) client, closed after the test."""
    with kube_apiserver.api_client("admin") as client:
        yield client


@pytest.fixture
def kube_namespace(kube_admin: kubernetes.client.ApiClient) -> str:
    """A fresh namespace for one test. No controller-manager runs, so it is left behind (a
    deleted namespace would stay Terminating forever); the session's etcd goes away anyway."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    body = kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=name))
    kubernetes.client.CoreV1Api(kube_admin).create_namespace(body)
    return name


@pytest.fixture
def fault_proxy(kube_apiserver: apiserver.ApiServer) -> Iterator[faultproxy.FaultProxy]:
    """A TLS proxy in front of the API server (same CA, same serving certificate): point a
    kubeconfig at `fault_proxy.url` (`kube_apiserver.kubeconfig(who, path, server=...)`)."""
    proxy = faultproxy.FaultProxy(
        upstream=kube_apiserver.url,
        ca_file=kube_apiserver.ca_file,
        cert_file=kube_apiserver.pki.serving_cert,
        key_file=kube_apiserver.pki.serving_key,
    )
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
