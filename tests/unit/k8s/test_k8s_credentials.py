"""Credentials: kubeconfig and in-cluster forms, the reloader that follows rotated files, and
the client's one retry after a 401 with credentials read again (a local plain-HTTP server)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.errors import ApiError
from braid.k8s.kubeconfig import Credentials, in_cluster_credentials, kubeconfig_credentials


def kubeconfig(
    path: Path, user: dict[str, object], cluster: dict[str, object] | None = None
) -> str:
    doc = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://10.0.0.1:6443/"}}],
        "users": [{"name": "u", "user": user}],
    }
    path.write_text(json.dumps(doc))
    return str(path)


def test_kubeconfig_token_file_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("secret-1\n")
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    path = kubeconfig(
        tmp_path / "kc",
        {"tokenFile": "token"},
        {"server": "https://10.0.0.1:6443/", "certificate-authority-data": ca},
    )
    creds = kubeconfig_credentials(path)
    assert creds.server == "https://10.0.0.1:6443"
    assert creds.token_file == str(tmp_path / "token")
    assert creds.bearer_token() == "secret-1"
    assert creds.ca_data.startswith("-----BEGIN CERTIFICATE")
    assert set(creds.files) == {path, str(tmp_path / "token")}


@pytest.mark.parametrize(
    ("user", "cluster", "problem"),
    [
        ({"token": "x"}, {"server": "10.0.0.1"}, "server must be an URL"),
        ({"client-key-data": "%%%"}, None, "key data is not valid base64"),
    ],
)
def test_kubeconfig_mistakes_are_code_7(
    tmp_path: Path, user: dict[str, object], cluster: dict[str, object] | None, problem: str
) -> None:
    with pytest.raises(CniError) as raised:
        kubeconfig_credentials(kubeconfig(tmp_path / "kc", user, cluster))
    assert raised.value.code == 7
    assert problem in raised.value.msg


def test_kubeconfig_without_the_named_user(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    kubeconfig(path, {"token": "x"})
    path.write_text(path.read_text().replace('"name": "u"', '"name": "other"'))
    with pytest.raises(CniError, match="no user named 'u'"):
        kubeconfig_credentials(str(path))


def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(CniError, match="cannot be read") as raised:
        kubeconfig_credentials(str(tmp_path / "absent"))
    assert raised.value.code == 7


def test_in_cluster(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("ca")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    creds = in_cluster_credentials(env, str(tmp_path))
    assert creds.server == "https://[fd00::1]:443"
    assert creds.bearer_token() == "sa-token"
    assert creds.ca_file == str(tmp_path / "ca.crt")


def test_in_cluster_without_a_mounted_token(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(CniError, match="is a service account token mounted"):
        in_cluster_credentials(env, str(tmp_path))
    with pytest.raises(CniError, match="must be set"):
        in_cluster_credentials({}, str(tmp_path))


def test_the_reloader_follows_a_rotated_token_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    creds = Credentials(
        server="https://x", source="test", token_file=str(token), files=(str(token),)
    )
    reloader = CredentialReloader(lambda: creds)
    assert reloader.current().token == "one"
    assert reloader.current().token == "one"
    assert reloader.reloads == 0
    fresh = tmp_path / "token.new"
    fresh.write_text("two")
    fresh.replace(token)  # as the kubelet does: a new inode
    snapshot = reloader.current()
    assert snapshot.token == "two"
    assert reloader.reloads == 1
    assert snapshot.tls_generation == 0  # the TLS material did not change


def test_the_tls_generation_moves_when_the_ca_changes(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("first")
    creds = Credentials(server="https://x", source="test", ca_file=str(ca), files=(str(ca),))
    reloader = CredentialReloader(lambda: creds)
    ca.write_text("second, longer")
    assert reloader.current().tls_generation == 1


class TokenServer:
    """Answers 200 {"kind":"Pod"} to the accepted token, 401 to any other; logs tokens."""

    def __init__(self, accepted: str) -> None:
        self.accepted = accepted
        self.seen: list[str] = []
        self.body = b'{"kind": "Pod"}'
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                server.seen.append(token)
                ok = token == server.accepted
                body = server.body if ok else b'{"kind":"Status","reason":"Unauthorized"}'
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def token_server() -> Iterator[TokenServer]:
    server = TokenServer("new")
    yield server
    server.stop()


def client_with_tokens(server: TokenServer, tokens: list[str]) -> KubeClient:
    """A client whose credential source hands out `tokens` in turn (no files to watch)."""
    supply = iter(tokens)

    def load() -> Credentials:
        return Credentials(server=server.url, source="test identity", token=next(supply))

    return KubeClient(CredentialReloader(load))


def test_a_401_rereads_the_credentials_and_retries_once(token_server: TokenServer) -> None:
    client = client_with_tokens(token_server, ["old", "new"])
    assert client.json("GET", "/api/v1/namespaces/a/pods/b") == {"kind": "Pod"}
    assert token_server.seen == ["old", "new"]
    client.close()


def test_a_401_after_rereading_is_a_clear_error(token_server: TokenServer) -> None:
    client = client_with_tokens(token_server, ["old", "still-old", "never"])
    with pytest.raises(ApiError) as raised:
        client.json("GET", "/api/v1/namespaces/a/pods/b")
    assert token_server.seen == ["old", "still-old"]
    assert raised.value.code == 7
    assert raised.value.status == 401
    assert "test identity were refused even after re-reading them" in raised.value.details
    client.close()


def test_an_answer_that_is_not_an_object_is_code_11(token_server: TokenServer) -> None:
    token_server.body = b"<html>"
    client = client_with_tokens(token_server, ["new"])
    with pytest.raises(ApiError) as raised:
        client.json("GET", "/api/v1/namespaces/a/pods/b")
    assert raised.value.code == 11
    assert "not a valid Kubernetes object" in raised.value.msg
    client.close()


def test_no_server_is_code_11() -> None:
    creds = Credentials(server="http://127.0.0.1:9", source="test")
    client = KubeClient(CredentialReloader(lambda: creds))
    with pytest.raises(ApiError) as raised:
        client.json("GET", "/version")
    assert raised.value.code == 11
    assert raised.value.status == 0
    assert "no answer from http://127.0.0.1:9" in raised.value.msg
