# ruff: noqa: S310 - every URL here is https://127.0.0.1 or http://127.0.0.1, built by the tier
"""The cluster tier's own fixture: a real API server serving the NAD CRD from deploy/base, its
identities and kubeconfigs, and the fault proxy in front of it."""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import apiserver
import cluster_manifests
import faultproxy
import kubernetes.client
import kubernetes.config
import pytest
from kubernetes.client.exceptions import ApiException

NAD_GROUP, NAD_VERSION, NAD_PLURAL = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"
MACVLAN = '{"cniVersion": "1.0.0", "type": "macvlan", "master": "eth0", "ipam": {"type": "dhcp"}}'


def get_json(server: apiserver.ApiServer, path: str, token: str | None, *, url: str = "") -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request((url or server.url) + path, headers=headers)
    with urllib.request.urlopen(request, context=server.ssl_context(), timeout=10) as answer:
        return json.load(answer)


def nad(name: str, config: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{NAD_GROUP}/{NAD_VERSION}",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name},
        "spec": {"config": config},
    }


def test_discovery_lists_the_nad_resource_with_its_short_names(
    kube_apiserver: apiserver.ApiServer,
) -> None:
    listing = get_json(kube_apiserver, "/apis/k8s.cni.cncf.io/v1", kube_apiserver.token("admin"))
    resources = {r["name"]: r for r in listing["resources"]}
    resource = resources[NAD_PLURAL]
    assert resource["kind"] == "NetworkAttachmentDefinition"
    assert resource["namespaced"] is True
    assert sorted(resource["shortNames"]) == ["nad", "net-attach-def"]
    assert {"get", "list", "watch", "create", "patch"} <= set(resource["verbs"])
    version = get_json(kube_apiserver, "/version", kube_apiserver.token("admin"))
    assert version["major"] == "1"


def test_a_nad_round_trips_with_spec_config_a_string(
    kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    api.create_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, nad("macvlan-conf", MACVLAN)
    )
    stored = api.get_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, "macvlan-conf"
    )
    assert stored["spec"]["config"] == MACVLAN  # byte for byte, still a string
    assert stored["metadata"]["resourceVersion"]
    assert stored["metadata"]["uid"]


def test_the_crd_schema_refuses_a_config_that_is_not_a_string(
    kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    body = nad("as-object", "")
    body["spec"]["config"] = json.loads(MACVLAN)
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, body
        )
    assert refused.value.status == 422
    assert "spec.config" in str(refused.value.body)


def test_short_names_resolve_through_kubectl(
    kube_apiserver: apiserver.ApiServer, kube_namespace: str, tmp_path: Path
) -> None:
    config = kube_apiserver.kubeconfig("admin", tmp_path / "admin.kubeconfig")
    with kube_apiserver.api_client() as admin:
        kubernetes.client.CustomObjectsApi(admin).create_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, nad("short", MACVLAN)
        )
    for short in ("nad", "net-attach-def"):
        done = subprocess.run(
            [cluster_manifests.kubectl(), f"--kubeconfig={config}", "-n", kube_namespace,
             "get", short, "-o", "name"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "networkattachmentdefinition.k8s.cni.cncf.io/short"


@pytest.mark.parametrize("token", ["not-a-token", "eyJhbGciOiJFUzI1NiJ9.e30.c2lnbmF0dXJl"])
def test_a_bad_token_gets_401(kube_apiserver: apiserver.ApiServer, token: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        get_json(kube_apiserver, "/api/v1/namespaces/default/pods", token)
    assert refused.value.code == 401
    status = json.loads(refused.value.read())
    assert status["kind"] == "Status"
    assert status["reason"] == "Unauthorized"


def test_no_token_is_anonymous_and_forbidden(kube_apiserver: apiserver.ApiServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        get_json(kube_apiserver, "/api/v1/namespaces/default/pods", None)
    assert refused.value.code == 403
    assert '"system:anonymous"' in json.loads(refused.value.read())["message"]


def test_the_kubeconfig_authenticates_as_its_identity(
    kube_apiserver: apiserver.ApiServer, tmp_path: Path
) -> None:
    path = kube_apiserver.kubeconfig("braid", tmp_path / "braid.kubeconfig")
    client = kubernetes.config.new_client_from_config(config_file=str(path))
    with client:
        review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
            kubernetes.client.V1SelfSubjectReview()
        )
    assert review.status.user_info.username == apiserver.BRAID_USER
    assert "system:serviceaccounts:braid-system" in review.status.user_info.groups


def test_the_server_rejects_clients_that_do_not_trust_its_ca(
    kube_apiserver: apiserver.ApiServer,
) -> None:
    request = urllib.request.Request(kube_apiserver.url + "/readyz")
    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(request, context=ssl.create_default_context(), timeout=10)
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


def test_token_request_issues_a_bound_token_for_braid(
    kube_apiserver: apiserver.ApiServer, kube_admin: kubernetes.client.ApiClient
) -> None:
    request = kubernetes.client.AuthenticationV1TokenRequest(
        spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    issued = kubernetes.client.CoreV1Api(kube_admin).create_namespaced_service_account_token(
        "braid", "braid-system", request
    )
    token = issued.status.token
    assert token != kube_apiserver.token("braid")
    review = get_json(kube_apiserver, "/api/v1/namespaces/default/pods?limit=1", token)
    assert review["kind"] == "PodList"  # braid's ClusterRole lets it list pods


def test_fault_proxy_forwards_and_logs(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> None:
    token = kube_apiserver.token("admin")
    listing = get_json(kube_apiserver, "/api/v1/namespaces?limit=5", token, url=fault_proxy.url)
    assert listing["kind"] == "NamespaceList"
    [entry] = fault_proxy.requests()
    assert (entry.method, entry.path, entry.query, entry.status) == (
        "GET", "/api/v1/namespaces", {"limit": "5"}, 200,
    )  # fmt: skip


def test_fault_proxy_answers_429_with_retry_after_then_forwards(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> None:
    token = kube_apiserver.token("admin")
    fault_proxy.respond(429, retry_after=3, count=1, match=faultproxy.where(path="/namespaces"))
    with pytest.raises(urllib.error.HTTPError) as throttled:
        get_json(kube_apiserver, "/api/v1/namespaces", token, url=fault_proxy.url)
    assert throttled.value.code == 429
    assert throttled.value.headers["Retry-After"] == "3"
    assert json.loads(throttled.value.read())["reason"] == "TooManyRequests"
    assert get_json(kube_apiserver, "/api/v1/namespaces", token, url=fault_proxy.url)["items"]
    assert [r.status for r in fault_proxy.requests()] == [429, 200]


@pytest.mark.parametrize("status", [500, 503])
def test_fault_proxy_fails_n_requests(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy, status: int
) -> None:
    token = kube_apiserver.token("admin")
    fault_proxy.respond(status, count=2)
    codes = []
    for _ in range(3):
        try:
            get_json(kube_apiserver, "/version", token, url=fault_proxy.url)
            codes.append(200)
        except urllib.error.HTTPError as failed:
            codes.append(failed.code)
    assert codes == [status, status, 200]


def test_fault_proxy_delays_matching_requests_only(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> None:
    token = kube_apiserver.token("admin")
    fault_proxy.delay(0.5, match=faultproxy.where(method="GET", path="/api/v1/namespaces"))
    started = time.monotonic()
    get_json(kube_apiserver, "/version", token, url=fault_proxy.url)
    fast = time.monotonic() - started
    get_json(kube_apiserver, "/api/v1/namespaces", token, url=fault_proxy.url)
    slow = time.monotonic() - started - fast
    assert fast < 0.4
    assert slow >= 0.5


def test_fault_proxy_drops_a_watch_after_n_events(
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    fault_proxy: faultproxy.FaultProxy,
    kube_namespace: str,
) -> None:
    core = kubernetes.client.CoreV1Api(kube_admin)
    for name in ("a", "b"):
        core.create_namespaced_config_map(kube_namespace, {"metadata": {"name": name}})
    fault_proxy.drop_watch(after_events=1)
    connection = http.client.HTTPSConnection(
        "127.0.0.1", int(fault_proxy.url.rsplit(":", 1)[1]), context=kube_apiserver.ssl_context()
    )
    token = kube_apiserver.token("admin")
    connection.request(
        "GET",
        f"/api/v1/namespaces/{kube_namespace}/configmaps?watch=1&timeoutSeconds=20",
        headers={"Authorization": f"Bearer {token}"},
    )
    response = connection.getresponse()
    assert response.status == 200
    first = json.loads(response.readline())
    assert first["type"] == "ADDED"
    with pytest.raises((http.client.IncompleteRead, ConnectionError, ssl.SSLError)):
        response.read()  # the second ADDED never arrives: the stream breaks
    connection.close()
    [entry] = fault_proxy.requests(faultproxy.where(watch=True))
    assert entry.dropped
    assert entry.query["watch"] == "1"


def test_fault_proxy_can_answer_garbage(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> None:
    fault_proxy.respond(200, body=b"<html>gateway</html>", content_type="text/html")
    request = urllib.request.Request(
        fault_proxy.url + "/api/v1/namespaces/default/pods/x",
        headers={"Authorization": f"Bearer {kube_apiserver.token('admin')}"},
    )
    with urllib.request.urlopen(request, context=kube_apiserver.ssl_context()) as answer:
        assert answer.read() == b"<html>gateway</html>"
        assert answer.headers["Content-Type"] == "text/html"


def test_fault_proxy_stopped_is_an_api_server_gone_and_comes_back_on_the_same_url(
    kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> None:
    token = kube_apiserver.token("admin")
    url = fault_proxy.url
    assert get_json(kube_apiserver, "/version", token, url=url)["major"] == "1"
    fault_proxy.stop()
    with pytest.raises(urllib.error.URLError) as down:
        get_json(kube_apiserver, "/version", token, url=url)
    assert isinstance(down.value.reason, ConnectionRefusedError)
    fault_proxy.start()
    assert fault_proxy.url == url
    assert get_json(kube_apiserver, "/version", token, url=url)["major"] == "1"
