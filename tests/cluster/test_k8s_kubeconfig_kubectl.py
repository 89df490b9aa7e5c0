"""Kubeconfigs read as kubectl reads them, checked against kubectl itself on the same files:
a ``$KUBECONFIG`` list with conflicting names (kubectl's ``config view --minify --flatten``
is the oracle for each context), then an exec credential plugin (a token, then a client
certificate) and a relative ``tokenFile`` that authenticate both kubectl and braid to the real
API server, as the same user, with the same ``KUBERNETES_EXEC_INFO``."""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apiserver
import cluster_pki
import pytest

from braid.commands.hotplug import operator_client
from braid.k8s.kubeconfig import Credentials, kubeconfig_credentials

KUBECTL = apiserver.BIN_DIR / "kubectl"
V1 = "client.authentication.k8s.io/v1"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def kubectl(env_list: str, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "KUBECONFIG": env_list}
    done = subprocess.run(
        [str(KUBECTL), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def write(path: Path, doc: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return str(path)


def named(name: str, key: str, inner: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, key: inner}


def three_files(root: Path) -> list[str]:
    """Three folders, each with its own CA, certificate and key files named relatively."""
    for folder in "abc":
        (root / folder).mkdir()
        for file in ("ca.crt", "c.crt", "c.key"):
            (root / folder / file).write_bytes(f"{folder}/{file}\n".encode())
    a = write(root / "a" / "config", {
        "current-context": "",
        "clusters": [named("shared", "cluster", {"server": "https://a:1",
                                                 "certificate-authority": "ca.crt",
                                                 "proxy-url": "http://proxy-a:3128"})],
        "users": [named("cert", "user", {"client-certificate": "c.crt", "client-key": "c.key"})],
        "contexts": [named("one", "context", {"cluster": "shared", "user": "cert"})],
    })  # fmt: skip
    b = write(root / "b" / "config", {
        "current-context": "two",
        "clusters": [named("shared", "cluster", {"server": "https://b:2", "tls-server-name": "x"}),
                     named("own-b", "cluster", {"server": "https://b:3",
                                                "certificate-authority": "ca.crt",
                                                "insecure-skip-tls-verify": False})],
        "users": [named("cert", "user", {"token": "from-b"}),
                  named("tok", "user", {"token": "t-b", "client-certificate": "c.crt",
                                        "client-key": "c.key"})],
        "contexts": [named("one", "context", {"cluster": "own-b", "user": "tok"}),
                     named("two", "context", {"cluster": "own-b", "user": "cert"})],
    })  # fmt: skip
    c = write(root / "c" / "config", {
        "current-context": "three",
        "clusters": [named("own-c", "cluster", {"server": "https://c:4",
                                                "certificate-authority": "ca.crt",
                                                "tls-server-name": "api.c"})],
        "users": [named("tok", "user", {"token": "t-c"})],
        "contexts": [named("three", "context", {"cluster": "own-c", "user": "tok"})],
    })  # fmt: skip
    return [a, str(root / "absent"), b, c, a]


def as_kubectl_shows(creds: Credentials) -> dict[str, Any]:
    """braid's credentials in the fields of kubectl's flattened view."""
    ca = creds.ca_data.encode() or (Path(creds.ca_file).read_bytes() if creds.ca_file else b"")
    cert = creds.cert_data or (Path(creds.cert_file).read_bytes() if creds.cert_file else b"")
    key = creds.key_data or (Path(creds.key_file).read_bytes() if creds.key_file else b"")
    found = {
        "server": creds.server,
        "certificate-authority-data": base64.b64encode(ca).decode(),
        "tls-server-name": creds.tls_server_name,
        "proxy-url": creds.proxy_url,
        "token": creds.token,
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    return {k: v for k, v in found.items() if v}


def kubectl_view(listed: str, context: str) -> dict[str, Any]:
    args = ["config", "view", "--minify", "--flatten", "-o", "json"]
    view = json.loads(kubectl(listed, *args, *(["--context", context] if context else [])))
    cluster, user = view["clusters"][0]["cluster"], view["users"][0]["user"]
    return {k: v for k, v in {**cluster, **user}.items() if v and k != "insecure-skip-tls-verify"}


@pytest.mark.parametrize("context", ["", "one", "two", "three"])
def test_a_kubeconfig_list_merges_as_kubectl_merges_it(tmp_path: Path, context: str) -> None:
    listed = three_files(tmp_path)
    expected = kubectl_view(os.pathsep.join(listed), context)
    creds = kubeconfig_credentials(listed, context=context)
    assert as_kubectl_shows(creds) == expected
    assert not creds.insecure


def exec_plugin(folder: Path, status: dict[str, Any]) -> Path:
    """A plugin that logs its KUBERNETES_EXEC_INFO (one line per run) and answers `status`."""
    log = folder / "exec-info.log"
    script = folder / "bin" / "get-credential"
    script.parent.mkdir(parents=True)
    answer = json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status})
    script.write_text(
        f"#!{sys.executable}\nimport os\n"
        f"open({str(log)!r}, 'a').write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        f"print({answer!r})\n"
    )
    script.chmod(0o755)
    return log


def exec_kubeconfigs(server: apiserver.ApiServer, root: Path) -> str:
    """The exec user in one file (its plugin and CA relative to it); the context current in a
    second file, which also holds a `tokenFile` user whose token file is relative to it."""
    (root / "a").mkdir(parents=True)
    (root / "a" / "ca.crt").write_bytes(server.ca_file.read_bytes())
    plugin_user = {"exec": {"apiVersion": V1, "command": "./bin/get-credential",
                            "interactiveMode": "Never", "provideClusterInfo": True}}  # fmt: skip
    a = write(root / "a" / "config", {
        "clusters": [named("real", "cluster", {"server": server.url,
                                               "certificate-authority": "ca.crt",
                                               "tls-server-name": "localhost"})],
        "users": [named("plugin", "user", plugin_user)],
    })  # fmt: skip
    (root / "b").mkdir()
    (root / "b" / "admin.token").write_text(server.token("admin"))
    b = write(root / "b" / "config", {
        "current-context": "via-plugin",
        "users": [named("file", "user", {"tokenFile": "admin.token"})],
        "contexts": [named("via-plugin", "context", {"cluster": "real", "user": "plugin"}),
                     named("via-file", "context", {"cluster": "real", "user": "file"})],
    })  # fmt: skip
    return os.pathsep.join([a, b])


def braid_whoami(listed: str, context: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Who the API server says braid is, with braidctl attach's own client."""
    monkeypatch.setenv("KUBECONFIG", listed)
    client = operator_client(argparse.Namespace(kubeconfig=None, context=context))
    try:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        found = client.json("POST", WHOAMI, body=json.dumps(review).encode())
    finally:
        client.close()
    return str(found["status"]["userInfo"]["username"])


def kubectl_whoami(listed: str, context: str) -> str:
    out = kubectl(listed, "auth", "whoami", "-o", "json", *(["--context", context] * bool(context)))
    return str(json.loads(out)["status"]["userInfo"]["username"])


@pytest.mark.parametrize("answer", ["token", "certificate"])
def test_an_exec_plugin_authenticates_kubectl_and_braid_alike(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
) -> None:
    if answer == "token":
        status = {
            "token": kube_apiserver.token("admin"),
            "expirationTimestamp": "2099-01-01T00:00:00Z",
        }
        user = apiserver.IDENTITIES["admin"].user
    else:
        user = f"braid-exec-{tmp_path.name[-8:]}"
        cert, key = cluster_pki.make_client_cert(kube_apiserver.pki, user, user)
        status = {"clientCertificateData": cert.read_text(), "clientKeyData": key.read_text()}
    listed = exec_kubeconfigs(kube_apiserver, tmp_path)
    log = exec_plugin(tmp_path / "a", status)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # no extra needed: braid runs it

    assert kubectl_whoami(listed, "") == user
    assert braid_whoami(listed, "", monkeypatch) == user
    runs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert len(runs) == 2  # one run each: braid kept its answer
    kubectl_info, braid_info = runs
    assert braid_info == kubectl_info
    assert braid_info["spec"]["cluster"]["server"] == kube_apiserver.url


def test_a_relative_token_file_and_context_as_kubectl(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = exec_kubeconfigs(kube_apiserver, tmp_path)
    admin = apiserver.IDENTITIES["admin"].user
    assert kubectl_whoami(listed, "via-file") == admin
    assert braid_whoami(listed, "via-file", monkeypatch) == admin
    assert not (tmp_path / "a" / "exec-info.log").exists()  # the plugin's context was not used
