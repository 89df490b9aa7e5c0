"""Which proxy the Kubernetes client takes: the cluster's `proxy-url`, else HTTPS_PROXY /
HTTP_PROXY with NO_PROXY honoured, as kubectl; and the proxies braid cannot use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.kubeconfig import Credentials, kubeconfig_credentials
from braid.k8s.proxy import checked_proxy_url, proxy_for, proxy_headers, shown, without_login

HTTPS_SERVER = "https://api.example.com:6443"
PROXY = "http://proxy.corp:3128"


def test_the_clusters_proxy_url_wins_over_the_environment() -> None:
    env = {"HTTPS_PROXY": "http://other:1", "NO_PROXY": "*"}
    assert proxy_for(HTTPS_SERVER, PROXY, env) == PROXY


@pytest.mark.parametrize(
    ("server", "env", "expected"),
    [
        (HTTPS_SERVER, {"HTTPS_PROXY": PROXY}, PROXY),
        (HTTPS_SERVER, {"https_proxy": PROXY}, PROXY),
        (HTTPS_SERVER, {"HTTPS_PROXY": PROXY, "https_proxy": "http://lower:1"}, PROXY),
        (HTTPS_SERVER, {"HTTPS_PROXY": "proxy.corp:3128"}, PROXY),  # no scheme: http
        (HTTPS_SERVER, {"HTTP_PROXY": PROXY}, ""),  # HTTP_PROXY is for http servers
        ("http://api.example.com:8080", {"HTTP_PROXY": PROXY}, PROXY),
        ("http://api.example.com:8080", {"HTTPS_PROXY": PROXY}, ""),
        (HTTPS_SERVER, {}, ""),
        (HTTPS_SERVER, {"HTTPS_PROXY": "  "}, ""),
    ],
)
def test_the_environment_names_the_proxy_per_scheme(
    server: str, env: dict[str, str], expected: str
) -> None:
    assert proxy_for(server, "", env) == expected


@pytest.mark.parametrize(
    ("server", "no_proxy", "direct"),
    [
        (HTTPS_SERVER, "*", True),
        (HTTPS_SERVER, "example.com", True),
        (HTTPS_SERVER, "api.example.com", True),
        (HTTPS_SERVER, ".example.com", True),
        (HTTPS_SERVER, "*.example.com", True),
        (HTTPS_SERVER, "EXAMPLE.com ,other", True),
        (HTTPS_SERVER, "api.example.com:6443", True),
        (HTTPS_SERVER, "api.example.com:443", False),
        (HTTPS_SERVER, "ample.com", False),
        (HTTPS_SERVER, ".api.example.com", False),  # subdomains only
        ("https://example.com", ".example.com", False),
        ("https://example.com", "example.com:443", True),  # the scheme's port
        (HTTPS_SERVER, "", False),
        (HTTPS_SERVER, ",,", False),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://10.1.2.3:6443", "10.1.2.3", True),
        ("https://10.1.2.3:6443", "10.1.2.4,192.168.0.0/16", False),
        ("https://10.1.2.3:6443", "10.0.0.0/33", False),  # not a network: ignored
        ("https://[2001:db8::1]:6443", "2001:db8::/32", True),
        ("https://[2001:db8::1]:6443", "[2001:db8::1]:6443", True),
        ("https://[2001:db8::1]:6443", "2001:db8::2", False),
        ("https://localhost:6443", "", True),  # never from the environment
        ("https://127.0.0.1:6443", "", True),
        ("https://[::1]:6443", "", True),
    ],
)
def test_no_proxy(server: str, no_proxy: str, direct: bool) -> None:
    env = {"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}
    assert proxy_for(server, "", env) == ("" if direct else PROXY)
    assert proxy_for(server, "", {"HTTPS_PROXY": PROXY, "no_proxy": no_proxy}) == (
        "" if direct else PROXY
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("socks5://user:pw@proxy.corp:1080", "SOCKS proxies need PySocks"),
        ("socks5h://proxy.corp:1080", "SOCKS proxies need PySocks"),
        ("ftp://proxy.corp", "must be an http:// or https:// URL"),
        ("http://", "must be an http:// or https:// URL"),
        ("http://proxy.corp:99999", "not a URL"),
        ("http://proxy.corp:3128/path", "nothing more"),
        ("http://proxy.corp:3128?x=1", "nothing more"),
    ],
)
def test_a_proxy_braid_cannot_use_is_a_code_7_error_naming_it(url: str, why: str) -> None:
    with pytest.raises(CniError) as caught:
        checked_proxy_url(url, "here")
    assert caught.value.code == 7
    assert why in caught.value.msg
    assert "(here)" in caught.value.msg
    assert "pw" not in caught.value.msg


def test_a_password_is_never_shown_and_travels_as_basic_auth() -> None:
    url = "http://us%40er:p%3Ass@proxy.corp:3128"
    assert shown(url) == "http://us%40er:***@proxy.corp:3128"
    assert shown(PROXY) == PROXY
    assert without_login(url) == PROXY
    assert proxy_headers(url) == {"Proxy-Authorization": "Basic dXNAZXI6cDpzcw=="}  # us@er:p:ss
    assert proxy_headers(PROXY) == {}
    assert checked_proxy_url("https://proxy.corp", "x") == "https://proxy.corp"


def kubeconfig(path: Path, cluster: dict[str, object]) -> str:
    doc = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": HTTPS_SERVER, **cluster}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    path.write_text(json.dumps(doc))
    return str(path)


def test_the_kubeconfig_reader_keeps_the_clusters_proxy_url(tmp_path: Path) -> None:
    creds = kubeconfig_credentials(kubeconfig(tmp_path / "kc", {"proxy-url": PROXY}))
    assert creds.proxy_url == PROXY
    assert kubeconfig_credentials(kubeconfig(tmp_path / "kc2", {})).proxy_url == ""


def test_a_socks_proxy_url_in_the_kubeconfig_is_refused_when_read(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"proxy-url": "socks5://proxy.corp:1080"})
    with pytest.raises(CniError) as caught:
        kubeconfig_credentials(path)
    assert caught.value.code == 7
    assert "socks5://proxy.corp:1080" in caught.value.msg
    assert f"proxy-url of the cluster in kubeconfig {path}" in caught.value.msg


def test_a_socks_proxy_in_the_environment_is_a_code_7_error_of_the_request() -> None:
    creds = Credentials(server=HTTPS_SERVER, source="test", token="t")
    client = KubeClient(CredentialReloader(lambda: creds), env={"HTTPS_PROXY": "socks5://p:1"})
    with pytest.raises(CniError) as caught:
        client.json("GET", "/api/v1/namespaces/default")
    assert caught.value.code == 7
    assert "socks5://p:1 (environment variable HTTPS_PROXY)" in caught.value.msg
