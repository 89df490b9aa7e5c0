"""braid's Kubernetes client through a real HTTP CONNECT proxy in front of the real API server:
the cluster's `proxy-url` (with a login), HTTPS_PROXY from the environment, and NO_PROXY."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import apiserver
import pytest
from connect_proxy import ConnectProxy

from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.errors import ApiError
from braid.k8s.kubeconfig import kubeconfig_credentials

# A name only the proxy resolves: the client reaches it through the tunnel or not at all.
PROXIED_NAME = "kube-api.braid.test"
LOGIN = "braid:s3cret"


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    made = ConnectProxy(hosts={PROXIED_NAME: "127.0.0.1"}, login=LOGIN)
    made.start()
    try:
        yield made
    finally:
        made.stop()


def client_for(
    server: apiserver.ApiServer,
    path: Path,
    env: Mapping[str, str],
    *,
    url: str | None = None,
    **cluster: str,
) -> KubeClient:
    """A client as admin from a kubeconfig whose cluster has `cluster`'s extra fields."""
    server.kubeconfig("admin", path, server=url)
    doc = json.loads(path.read_text())
    doc["clusters"][0]["cluster"].update(cluster)
    path.write_text(json.dumps(doc))
    return KubeClient(CredentialReloader(lambda: kubeconfig_credentials(str(path))), env=env)


def test_the_clusters_proxy_url_carries_the_requests_through_a_tunnel(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, proxy: ConnectProxy
) -> None:
    with_login = proxy.url.replace("http://", f"http://{LOGIN}@")
    # proxy-url wins over an environment that says "no proxy for anything"
    client = client_for(
        kube_apiserver, tmp_path / "kc", {"NO_PROXY": "*"}, **{"proxy-url": with_login}
    )
    try:
        for _ in range(2):
            found = client.json("GET", "/api/v1/namespaces/default")
            assert found["metadata"]["name"] == "default"
    finally:
        client.close()
    assert proxy.tunnels == [f"127.0.0.1:{kube_apiserver.port}"], "one tunnel, reused"
    assert proxy.refused == []


def test_a_login_the_proxy_refuses_is_an_error_naming_the_server(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, proxy: ConnectProxy
) -> None:
    wrong = proxy.url.replace("http://", "http://braid:wrong@")
    client = client_for(kube_apiserver, tmp_path / "kc", {}, **{"proxy-url": wrong})
    try:
        with pytest.raises(ApiError) as caught:
            client.json("GET", "/api/v1/namespaces/default")
    finally:
        client.close()
    assert caught.value.code == 11
    assert kube_apiserver.url in caught.value.msg
    assert "407" in caught.value.details
    assert proxy.tunnels == []
    assert proxy.refused == [f"no login for 127.0.0.1:{kube_apiserver.port}"]


def test_https_proxy_from_the_environment_reaches_a_name_only_the_proxy_knows(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, proxy: ConnectProxy
) -> None:
    url = f"https://{PROXIED_NAME}:{kube_apiserver.port}"
    bare = proxy.url.removeprefix("http://")  # no scheme: an http proxy, as for kubectl
    env = {"HTTPS_PROXY": f"{LOGIN}@{bare}", "NO_PROXY": "localhost,10.0.0.0/8,other.test"}
    # the serving certificate names localhost; the proxied name is only the address
    client = client_for(
        kube_apiserver, tmp_path / "kc", env, url=url, **{"tls-server-name": "localhost"}
    )
    try:
        assert client.json("GET", "/api/v1/namespaces/default")["metadata"]["name"] == "default"
    finally:
        client.close()
    assert proxy.tunnels == [f"{PROXIED_NAME}:{kube_apiserver.port}"]


@pytest.mark.parametrize("no_proxy", [".braid.test", "braid.test", PROXIED_NAME, "*"])
def test_no_proxy_sends_the_request_direct(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, proxy: ConnectProxy, no_proxy: str
) -> None:
    url = f"https://{PROXIED_NAME}:{kube_apiserver.port}"
    env = {"https_proxy": proxy.url.replace("http://", f"http://{LOGIN}@"), "no_proxy": no_proxy}
    client = client_for(
        kube_apiserver, tmp_path / "kc", env, url=url, **{"tls-server-name": "localhost"}
    )
    try:
        with pytest.raises(ApiError) as caught:  # direct, the name does not resolve
            client.json("GET", "/api/v1/namespaces/default")
    finally:
        client.close()
    assert caught.value.code == 11
    assert url in caught.value.msg
    assert proxy.tunnels == []
