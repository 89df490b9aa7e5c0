"""Credentials on a real API server: an in-cluster service account whose bound token is
invalidated (its Secret deleted) and rotated in the token file; braid keeps working without a
restart, and says clearly when its credentials are refused."""

from __future__ import annotations

import time
from pathlib import Path

import apiserver
import kubernetes.client
import pytest
from k8s_engine import create_pod

from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.kubeconfig import in_cluster_credentials
from braid.k8s.retry import RetryPolicy
from braid.k8s.store import KubeStore

NAMESPACE, ACCOUNT = "braid-system", "braid"


def bound_token(admin: kubernetes.client.ApiClient, secret: str) -> str:
    """A token of braid's service account bound to a new Secret: valid while it exists."""
    core = kubernetes.client.CoreV1Api(admin)
    created = core.create_namespaced_secret(
        NAMESPACE, kubernetes.client.V1Secret(metadata=kubernetes.client.V1ObjectMeta(name=secret))
    )
    spec = kubernetes.client.V1TokenRequestSpec(
        audiences=[],
        expiration_seconds=3600,
        bound_object_ref=kubernetes.client.V1BoundObjectReference(
            kind="Secret", api_version="v1", name=secret, uid=created.metadata.uid
        ),
    )
    request = kubernetes.client.AuthenticationV1TokenRequest(spec=spec)
    answer = core.create_namespaced_service_account_token(ACCOUNT, NAMESPACE, request)
    return str(answer.status.token)


def refusal(store: KubeStore, namespace: str, name: str, uid: str) -> CniError:
    """The error of a read, once the API server has noticed the deleted Secret (its
    authenticator reads Secrets through its own cache: a moment)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            store.get_pod(namespace, name, uid)
        except CniError as exc:
            return exc
        time.sleep(0.2)
    pytest.fail("the token of a deleted Secret is still accepted after 15 s")


def write_atomically(path: Path, text: str) -> None:
    """As the kubelet rotates projected tokens: a new file renamed over the old one."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text)
    fresh.replace(path)


def test_a_rotated_service_account_token_is_picked_up(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "web")
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "ca.crt").write_bytes(kube_apiserver.ca_file.read_bytes())
    token_file = account / "token"
    write_atomically(token_file, bound_token(kube_admin, "braid-token-1"))
    host, _, port = kube_apiserver.url.removeprefix("https://").partition(":")
    env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    reloader = CredentialReloader(lambda: in_cluster_credentials(env, str(account)))
    store = KubeStore(KubeClient(reloader), retry=RetryPolicy(attempts=1))

    assert store.get_pod(kube_namespace, "web", uid) == {}
    kubernetes.client.CoreV1Api(kube_admin).delete_namespaced_secret("braid-token-1", NAMESPACE)
    refused = refusal(store, kube_namespace, "web", uid)
    assert refused.code == 7
    assert "HTTP 401" in refused.msg
    assert "in-cluster service account" in refused.details
    reloads = reloader.reloads

    write_atomically(token_file, bound_token(kube_admin, "braid-token-2"))
    assert store.get_pod(kube_namespace, "web", uid) == {}
    assert reloader.reloads == reloads + 1
