"""Exec credential plugins without the ``kubernetes`` package: a small script as the plugin
(its args, env and ``KUBERNETES_EXEC_INFO`` as it saw them), the token kept until its
``expirationTimestamp``, certificate answers, and every bad answer a code-7 error.
(tests/cluster/test_k8s_kubeconfig_kubectl.py runs one against kubectl and a real API server.)"""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from braid.errors import CniError
from braid.k8s import kubeconfig_exec
from braid.k8s.credentials import CredentialReloader
from braid.k8s.kubeconfig import kubeconfig_credentials

V1 = "client.authentication.k8s.io/v1"


def plugin(tmp_path: Path, body: str) -> str:
    """An executable Python script: it records what it saw in seen-<n>.json, then runs body."""
    script = tmp_path / "bin" / "plugin"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent("""\
        import json, os, sys
        here = os.path.dirname(os.path.abspath(__file__))
        n = len([f for f in os.listdir(here) if f.startswith("seen-")])
        seen = {"argv": sys.argv[1:], "env": dict(os.environ)}
        open(os.path.join(here, f"seen-{n}.json"), "w").write(json.dumps(seen))
        """)
        + textwrap.dedent(body)
    )
    script.chmod(0o755)
    return str(script)


def answer(status: dict[str, Any], api: str = V1) -> str:
    doc = {"apiVersion": api, "kind": "ExecCredential", "status": status}
    return f"print({json.dumps(json.dumps(doc))})\n"


def kubeconfig(tmp_path: Path, spec: dict[str, Any], **cluster: Any) -> str:
    doc = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443", **cluster}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": V1, **spec}}}],
    }
    path = tmp_path / "kc"
    path.write_text(json.dumps(doc))
    return str(path)


def seen(tmp_path: Path, n: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((tmp_path / "bin" / f"seen-{n}.json").read_text())
    return found


@pytest.fixture(autouse=True)
def no_kubernetes_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in the node image: importing `kubernetes` fails."""
    monkeypatch.setitem(sys.modules, "kubernetes", None)


def test_a_token_plugin_with_args_env_and_cluster_info(tmp_path: Path) -> None:
    command = plugin(tmp_path, answer({"token": "tok-1"}))
    spec = {
        "command": "./bin/plugin",
        "args": ["get", "--x"],
        "interactiveMode": "Never",
        "env": [{"name": "PLUGIN_MODE", "value": "test"}],
        "provideClusterInfo": True,
    }
    ext = [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "a"}}]
    path = kubeconfig(tmp_path, spec, **{"tls-server-name": "api", "extensions": ext,
                                         "certificate-authority-data": "Q0E="})  # fmt: skip
    creds = kubeconfig_credentials(path)
    assert creds.bearer_token() == "tok-1"
    assert creds.expires == 0
    assert "(exec user)" in creds.source
    saw = seen(tmp_path)
    assert saw["argv"] == ["get", "--x"]
    assert saw["env"]["PLUGIN_MODE"] == "test"
    assert json.loads(saw["env"]["KUBERNETES_EXEC_INFO"]) == {
        "apiVersion": V1,
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {"server": "https://10.0.0.1:6443", "tls-server-name": "api",
                        "certificate-authority-data": "Q0E=", "config": {"audience": "a"}},
        },
    }  # fmt: skip
    assert command == str(tmp_path / "bin" / "plugin")


def test_without_provide_cluster_info_the_spec_has_no_cluster(tmp_path: Path) -> None:
    plugin(tmp_path, answer({"token": "t"}, "client.authentication.k8s.io/v1beta1"))
    spec = {"command": "./bin/plugin", "apiVersion": "client.authentication.k8s.io/v1beta1"}
    kubeconfig_credentials(kubeconfig(tmp_path, spec))  # v1beta1: IfAvailable by default
    info = json.loads(seen(tmp_path)["env"]["KUBERNETES_EXEC_INFO"])  # no cluster, no prompt
    assert info["spec"] == {"interactive": False}


def test_a_certificate_answer_replaces_the_users_certificate(tmp_path: Path) -> None:
    plugin(tmp_path, answer({"clientCertificateData": "CERT\n", "clientKeyData": "KEY\n"}))
    creds = kubeconfig_credentials(
        kubeconfig(tmp_path, {"command": "./bin/plugin", "interactiveMode": "IfAvailable"})
    )
    assert (creds.cert_data, creds.key_data, creds.token) == (b"CERT\n", b"KEY\n", "")


def stamp(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_token_is_kept_until_it_expires(tmp_path: Path) -> None:
    plugin(tmp_path, answer({"token": "t", "expirationTimestamp": stamp(timedelta(hours=1))}))
    path = kubeconfig(tmp_path, {"command": "./bin/plugin", "interactiveMode": "Never"})
    reloader = CredentialReloader(lambda: kubeconfig_credentials(path))
    for _ in range(3):
        assert reloader.current().token == "t"
    assert reloader.reloads == 0
    assert len(list((tmp_path / "bin").glob("seen-*"))) == 1
    reloader.reload()  # what a 401 does: the plugin runs again
    assert len(list((tmp_path / "bin").glob("seen-*"))) == 2


def test_an_expired_token_runs_the_plugin_again(tmp_path: Path) -> None:
    plugin(tmp_path, answer({"token": "t", "expirationTimestamp": stamp(-timedelta(seconds=5))}))
    path = kubeconfig(tmp_path, {"command": "./bin/plugin", "interactiveMode": "Never"})
    reloader = CredentialReloader(lambda: kubeconfig_credentials(path))
    reloader.current()
    reloader.current()
    assert reloader.reloads == 2
    assert len(list((tmp_path / "bin").glob("seen-*"))) == 3


@pytest.mark.parametrize(
    ("spec", "body", "problem"),
    [
        ({"interactiveMode": None}, answer({"token": "t"}), "interactiveMode must be one of"),
        ({"interactiveMode": "Always"}, answer({"token": "t"}), "not a terminal"),
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "", "apiVersion"),
        ({"args": "x"}, "", "args must be a list of strings"),
        ({"env": [{"name": "A"}]}, "", "env must be a list"),
        ({}, "print('not json')", "not an ExecCredential"),
        ({}, answer({"token": "t"}, "client.authentication.k8s.io/v1beta1"), "answered apiVersion"),
        ({}, answer({}), "neither a token nor a certificate"),
        ({}, answer({"clientCertificateData": "C"}), "come together"),
        ({}, answer({"token": "t", "expirationTimestamp": "soon"}), "not RFC 3339"),
        ({}, f"print(json.dumps({{'kind': 'ExecCredential', 'apiVersion': '{V1}'}}))", "no status"),
        ({}, "sys.stderr.write('login expired'); sys.exit(3)", "exit status 3: login expired"),
        ({}, "sys.stdout.write('x' * (2 << 20))", "wrote more than 1048576 bytes"),
        ({"command": "no-such-plugin", "installHint": "get it"}, "", "was not found: get it"),
    ],
)
def test_bad_plugins_and_answers_are_code_7(
    tmp_path: Path, spec: dict[str, Any], body: str, problem: str
) -> None:
    plugin(tmp_path, body)
    full = {"command": "./bin/plugin", "interactiveMode": "Never", **spec}
    if full["interactiveMode"] is None:
        del full["interactiveMode"]
    with pytest.raises(CniError) as raised:
        kubeconfig_credentials(kubeconfig(tmp_path, full))
    assert raised.value.code == 7
    assert problem in raised.value.msg
    assert "exec plugin" in raised.value.msg


def test_a_plugin_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeconfig_exec, "TIMEOUT", 0.5)
    plugin(tmp_path, "import time; time.sleep(30)")
    with pytest.raises(CniError, match=r"ran longer than 0\.5 s"):
        kubeconfig_credentials(
            kubeconfig(tmp_path, {"command": "./bin/plugin", "interactiveMode": "Never"})
        )
