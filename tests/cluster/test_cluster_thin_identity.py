"""braid-thin's own identity (deploy/components/braid-thin, `thinKubeconfig`) on the real API
server: braid's identity gets a TokenRequest token of braid-thin's account bound to a Node,
writes it in a private kubeconfig, replaces it before it expires (and when the file is gone or
changed), and the token dies with its Node; braid-thin's calls run with it (network-status,
events) and every other write is refused; the daemon may ask for that account's tokens only."""

from __future__ import annotations

import base64
import json
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apiserver
import cluster_manifests
import kubernetes.client
import pytest
from k8s_engine import NODE, STATUS_KEY, Node, create_nad, create_pod, node, read_pod
from kubernetes.client.exceptions import ApiException
from test_cluster_rbac import rule_set
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

from braid.config.schema import load_braid_config
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.kubeconfig import kubeconfig_credentials
from braid.k8s.select import connect
from braid.k8s.thin_token import ThinTokenKeeper, keeper_of

__all__ = ["k8s_daemon", "node"]  # the fixtures
THIN_USER = "system:serviceaccount:braid-system:braid-thin"
NAD = ("k8s.cni.cncf.io", "network-attachment-definitions")
# What braid-thin's role holds: exactly these (group, resource, verb).
THIN_RULES = {
    ("", "pods", "get"), ("", "pods", "list"), ("", "pods/status", "patch"),
    (*NAD, "get"), ("", "events", "create"), ("", "events", "patch"),
    ("resource.k8s.io", "resourceclaims", "get"), ("resource.k8s.io", "resourceslices", "list"),
}  # fmt: skip


@pytest.fixture
def thin_rbac(kube_admin: kubernetes.client.ApiClient) -> Iterator[list[dict[str, Any]]]:
    """deploy/components/braid-thin's objects, created for the test and removed after."""
    docs = cluster_manifests.render("components/braid-thin")
    made = []
    try:
        for doc in docs:
            made.append(cluster_manifests.create(kube_admin, doc))
        yield docs
    finally:
        for doc in reversed(made):
            delete(kube_admin, doc)


def delete(client: kubernetes.client.ApiClient, doc: dict[str, Any]) -> None:
    """DELETEs `doc` (as created by cluster_manifests.create)."""
    configuration = client.configuration
    url = f"{configuration.host}{cluster_manifests.collection_path(doc)}/{doc['metadata']['name']}"
    auth = configuration.get_api_key_with_prefix("authorization")
    response = client.call_api("DELETE", url, header_params={"Authorization": auth})
    response.read()
    assert response.status in {200, 202, 404}, response.data


@pytest.fixture
def thin_node(kube_admin: kubernetes.client.ApiClient) -> Iterator[str]:
    """A Node object of the test's own (no kubelet behind it)."""
    name = f"thin-{uuid.uuid4().hex[:8]}"
    core = kubernetes.client.CoreV1Api(kube_admin)
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    try:
        yield name
    finally:
        try:
            core.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def braid_client(kube_apiserver: apiserver.ApiServer, tmp_path: Path) -> Iterator[KubeClient]:
    """braid's identity (the daemon's), as braid's own client."""
    kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "braid.kubeconfig")
    conf = json.dumps({"type": "braid", "kubeconfig": str(kubeconfig)}).encode()
    client = connect(load_braid_config(conf).config.kubernetes, {})
    try:
        yield client
    finally:
        client.close()


def keeper(client: KubeClient, path: Path, node_name: str) -> ThinTokenKeeper:
    conf = (
        b'{"type": "braid", "thinKubeconfig": "/x", "thinTokenSeconds": 600, '
        b'"thinServiceAccount": "braid-system/braid-thin"}'
    )
    return keeper_of(load_braid_config(conf).config.daemon, str(path), node_name, client)


def token_in(path: Path) -> str:
    return str(json.loads(path.read_text())["users"][0]["user"]["token"])


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    found: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return found


def authenticated(admin: kubernetes.client.ApiClient, token: str) -> Any:
    review = {"spec": {"token": token}}
    return kubernetes.client.AuthenticationV1Api(admin).create_token_review(review).status


def test_the_token_is_bound_to_the_node_short_lived_and_private(
    thin_rbac: object,
    braid_client: KubeClient,
    kube_admin: kubernetes.client.ApiClient,
    thin_node: str,
    tmp_path: Path,
) -> None:
    path = tmp_path / "net.d" / "braid.d" / "braid-thin.kubeconfig"
    keeper(braid_client, path, thin_node).look()
    found = path.stat()
    assert stat.S_IMODE(found.st_mode) == 0o600
    assert (found.st_uid, found.st_gid) == (0, 0)
    token = token_in(path)
    said = claims(token)
    assert said["sub"] == THIN_USER
    assert said["exp"] - said["iat"] == 600
    assert said["kubernetes.io"]["node"]["name"] == thin_node
    status = authenticated(kube_admin, token)
    assert status.authenticated
    assert status.user.username == THIN_USER
    assert status.user.extra["authentication.kubernetes.io/node-name"] == [thin_node]
    creds = kubeconfig_credentials(str(path))  # braid-thin reads it as its `kubeconfig`
    assert creds.token == token
    assert creds.server == braid_client.reloader.current().credentials.server


def test_it_is_replaced_before_it_expires_and_when_the_file_changes(
    thin_rbac: object, braid_client: KubeClient, thin_node: str, tmp_path: Path
) -> None:
    path = tmp_path / "braid-thin.kubeconfig"
    kept = keeper(braid_client, path, thin_node)
    kept.look()
    first, inode = token_in(path), path.stat().st_ino
    kept.look()  # not due: nothing asked, nothing written
    assert (token_in(path), path.stat().st_ino) == (first, inode)
    assert kept.refresh_at == pytest.approx(claims(first)["iat"] + 480, abs=2)

    kept.clock = lambda: time.time() + 481  # four fifths of its life later
    kept.look()
    second = token_in(path)
    assert claims(second)["jti"] != claims(first)["jti"]
    assert path.stat().st_ino != inode  # a new file renamed over the old one

    kept.clock = time.time
    path.unlink()
    kept.look()
    assert claims(token_in(path))["jti"] != claims(second)["jti"]
    path.write_text("{}")
    kept.look()
    assert claims(token_in(path))["sub"] == THIN_USER


def test_the_token_dies_with_its_node(
    thin_rbac: object,
    braid_client: KubeClient,
    kube_admin: kubernetes.client.ApiClient,
    thin_node: str,
    tmp_path: Path,
) -> None:
    path = tmp_path / "braid-thin.kubeconfig"
    keeper(braid_client, path, thin_node).look()
    token = token_in(path)
    assert authenticated(kube_admin, token).authenticated
    kubernetes.client.CoreV1Api(kube_admin).delete_node(thin_node)
    assert wait_until(lambda: not authenticated(kube_admin, token).authenticated)


@pytest.fixture
def thin_kubeconfig(
    thin_rbac: object, braid_client: KubeClient, thin_node: str, tmp_path: Path
) -> Path:
    """braid-thin's kubeconfig as the daemon of `thin_node` writes it."""
    path = tmp_path / "braid-thin.kubeconfig"
    keeper(braid_client, path, thin_node).look()
    return path


def test_braid_thin_does_its_job_with_it(
    thin_kubeconfig: Path,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    node: Node,
    thin_node: str,
) -> None:
    ns, path = kube_namespace, thin_kubeconfig
    create_nad(kube_admin, ns, "blue")
    # On the token's node: the admission policy, where installed, holds braid-thin's writes to
    # the pods of its own node.
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"}, node=thin_node)
    # One ADD and one DEL as braid-thin makes them, with the kubeconfig the daemon wrote.
    result, code = node.run(
        "ADD", namespace=ns, pod="web", uid=uid, kubeconfig=str(path), statusWritePolicy="fail"
    )
    assert code == 0, result  # "fail": a refused status write fails the ADD, saying why
    status = json.loads(read_pod(kube_admin, ns, "web").metadata.annotations[STATUS_KEY])
    assert [s["name"] for s in status] == ["kcluster", f"{ns}/blue"]
    result, code = node.run("DEL", namespace=ns, pod="web", uid=uid, kubeconfig=str(path))
    assert code == 0, result


def test_braid_thin_may_do_nothing_else(
    thin_rbac: list[dict[str, Any]],
    thin_kubeconfig: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    [role] = [d for d in thin_rbac if d["kind"] == "ClusterRole"]
    assert rule_set(role["rules"]) == THIN_RULES
    ns = kube_namespace
    create_pod(kube_admin, ns, "web", {})
    with kube_apiserver.api_client(token=token_in(thin_kubeconfig)) as thin:
        core = kubernetes.client.CoreV1Api(thin)
        nads = kubernetes.client.CustomObjectsApi(thin)
        label = {"metadata": {"labels": {"touched": "yes"}}}
        nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
               "metadata": {"name": "red"}, "spec": {"config": "{}"}}  # fmt: skip
        token = {"spec": {"audiences": [], "expirationSeconds": 600}}
        refused = {
            "patch a pod": lambda: core.patch_namespaced_pod("web", ns, label),
            "delete a pod": lambda: core.delete_namespaced_pod("web", ns),
            "read secrets": lambda: core.list_namespaced_secret(ns),
            "list NADs": lambda: nads.list_cluster_custom_object(*NAD[:1], "v1", NAD[1]),
            "create a NAD": lambda: nads.create_namespaced_custom_object(
                NAD[0], "v1", ns, NAD[1], nad
            ),
            "read nodes": core.list_node,
            "mint tokens": lambda: core.create_namespaced_service_account_token(
                "braid-thin", "braid-system", token
            ),
        }
        for what, attempt in refused.items():
            with pytest.raises(ApiException) as denied:
                attempt()
            assert denied.value.status == 403, what
            assert THIN_USER in str(denied.value.body), what


def test_braids_identity_may_mint_braid_thins_tokens_only(
    thin_rbac: object, braid_client: KubeClient
) -> None:
    body = b'{"spec": {"audiences": [], "expirationSeconds": 600}}'
    own = "/api/v1/namespaces/braid-system/serviceaccounts/braid/token"
    with pytest.raises(ApiError) as refused:
        braid_client.json("POST", own, body=body)
    assert refused.value.status == 403
    thin = "/api/v1/namespaces/braid-system/serviceaccounts/braid-thin/token"
    assert braid_client.json("POST", thin, body=body)["status"]["token"]


def test_the_daemon_keeps_braid_thins_kubeconfig(
    thin_rbac: object,
    k8s_daemon: K8sDaemon,
    kube_admin: kubernetes.client.ApiClient,
) -> None:
    core = kubernetes.client.CoreV1Api(kube_admin)
    made = False
    try:
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
        made = True
    except ApiException as exc:
        if exc.status != 409:
            raise
    try:
        path = k8s_daemon.root / "net.d" / "braid-thin.kubeconfig"
        k8s_daemon.start(
            thinKubeconfig=str(path),
            thinTokenSeconds=600,
            thinServiceAccount="braid-system/braid-thin",
        )
        assert wait_until(path.exists), k8s_daemon.log_text()
        said = claims(token_in(path))
        assert said["sub"] == THIN_USER
        assert said["kubernetes.io"]["node"]["name"] == NODE
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert k8s_daemon.terminate() == 0
        assert path.exists(), "the token outlives the daemon's restart"
    finally:
        if made:
            core.delete_node(NODE)
