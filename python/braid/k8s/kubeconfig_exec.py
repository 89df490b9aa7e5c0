"""Kubeconfig users with ``exec``: an ExecCredential plugin run as kubectl runs it.

The client-go credential plugin protocol, ``client.authentication.k8s.io/v1`` and ``v1beta1``
(https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins):
``command`` with ``args``, the environment plus ``env``, and ``KUBERNETES_EXEC_INFO`` (an
ExecCredential whose ``spec.interactive`` says whether the plugin may prompt and, with
``provideClusterInfo``, whose ``spec.cluster`` describes the cluster). ``interactiveMode``
(required in v1; v1beta1 defaults to ``IfAvailable``): ``Never`` gives the plugin no standard
input; ``IfAvailable`` gives it braid's when that is a terminal; ``Always`` requires one.
The answer on standard output is an ExecCredential of the same version whose ``status``
carries a ``token`` or a ``clientCertificateData``/``clientKeyData`` pair (PEM), and maybe an
``expirationTimestamp``: the reloader (``braid.k8s.credentials``) keeps the answer until then,
and runs the plugin again after a 401.

The plugin is bounded: 60 s without a terminal (10 min with one), 1 MiB of output.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from braid.k8s.kubeconfig_merge import fail
from braid.k8s.kubeconfig_run import run_plugin

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
MODES = ("Never", "IfAvailable", "Always")
TIMEOUT, INTERACTIVE_TIMEOUT = 60.0, 600.0
EXEC_EXTENSION = "client.authentication.k8s.io/exec"


@dataclass(frozen=True)
class ExecAnswer:
    token: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    expires: float = 0.0  # seconds since the epoch; 0: never


def exec_answer(spec: Any, cluster: dict[str, Any], source: str) -> ExecAnswer:
    """Runs the plugin of the user's ``exec`` mapping ``spec`` for ``cluster``."""
    where = f"{source}, exec plugin"
    if not isinstance(spec, dict):
        raise fail(where, "exec must be a mapping")
    api = spec.get("apiVersion")
    if api not in API_VERSIONS:
        raise fail(where, f"apiVersion {api!r} is not one of {', '.join(API_VERSIONS)}")
    command = spec.get("command")
    if not isinstance(command, str) or not command:
        raise fail(where, "command must be set")
    argv = [command, *_strings(spec.get("args"), "args", where)]
    interactive = _interactive(spec, api, where)
    env = {**os.environ, **_env(spec.get("env"), where)}
    info = _exec_info(api, interactive, cluster if spec.get("provideClusterInfo") else None)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    hint = spec.get("installHint")
    try:
        out = run_plugin(
            argv,
            env,
            interactive=interactive,
            timeout=INTERACTIVE_TIMEOUT if interactive else TIMEOUT,
        )
    except FileNotFoundError:
        more = f": {hint}" if isinstance(hint, str) and hint else ""
        raise fail(where, f"{command!r} was not found{more}") from None
    except (OSError, RuntimeError) as exc:
        raise fail(where, f"{command!r} failed: {exc}") from None
    return _answer(out, api, where)


def _strings(value: Any, field: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(where, f"{field} must be a list of strings")
    return value


def _env(value: Any, where: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in value or []:
        ok = isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]
        if not ok or not isinstance(item.get("value"), str) or "=" in item["name"]:
            raise fail(where, "env must be a list of {name, value} strings")
        found[item["name"]] = item["value"]
    return found


def _interactive(spec: dict[str, Any], api: str, where: str) -> bool:
    mode = spec.get("interactiveMode")
    if mode is None and api.endswith("/v1beta1"):
        mode = "IfAvailable"
    if mode not in MODES:
        raise fail(where, f"interactiveMode must be one of {', '.join(MODES)}, not {mode!r}")
    try:
        terminal = sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed
        terminal = False
    if mode == "Always" and not terminal:
        raise fail(where, "interactiveMode is Always but standard input is not a terminal")
    return mode != "Never" and terminal


def _exec_info(api: str, interactive: bool, cluster: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"interactive": interactive}
    if cluster is not None:
        spec["cluster"] = _cluster_info(cluster)
    return {"apiVersion": api, "kind": "ExecCredential", "spec": spec}


def _cluster_info(cluster: dict[str, Any]) -> dict[str, Any]:
    """The v1 ``Cluster`` of ``spec.cluster``; the CA as data, as kubectl sends it."""
    ca = str(cluster.get("certificate-authority-data") or "")
    if not ca and cluster.get("certificate-authority"):
        try:
            ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
        except OSError:
            ca = ""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    for key, value in (
        ("tls-server-name", cluster.get("tls-server-name")),
        ("insecure-skip-tls-verify", cluster.get("insecure-skip-tls-verify")),
        ("certificate-authority-data", ca),
        ("proxy-url", cluster.get("proxy-url")),
        ("disable-compression", cluster.get("disable-compression")),
    ):
        if value:
            info[key] = value
    info["config"] = _extension(cluster)  # null when absent, as kubectl sends it
    return info


def _extension(cluster: dict[str, Any]) -> Any:
    for item in cluster.get("extensions") or []:
        if isinstance(item, dict) and item.get("name") == EXEC_EXTENSION:
            return item.get("extension")
    return None


def _answer(out: bytes, api: str, where: str) -> ExecAnswer:
    try:
        doc = json.loads(out)
    except (ValueError, UnicodeDecodeError):
        raise fail(where, "its output is not an ExecCredential (JSON)") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise fail(where, "its output is not an ExecCredential")
    if doc.get("apiVersion") != api:
        raise fail(where, f"it answered apiVersion {doc.get('apiVersion')!r}, asked for {api}")
    status = doc.get("status")
    if not isinstance(status, dict):
        raise fail(where, "its ExecCredential has no status")
    token, cert, key = (status.get(k) or "" for k in ("token", "clientCertificateData",
                                                       "clientKeyData"))  # fmt: skip
    if not all(isinstance(v, str) for v in (token, cert, key)):
        raise fail(where, "token, clientCertificateData and clientKeyData must be strings")
    if bool(cert) != bool(key):
        raise fail(where, "clientCertificateData and clientKeyData come together")
    if not token and not cert:
        raise fail(where, "its ExecCredential has neither a token nor a certificate")
    return ExecAnswer(token, cert.encode(), key.encode(), _expiry(status, where))


def _expiry(status: dict[str, Any], where: str) -> float:
    stamp = status.get("expirationTimestamp")
    if not stamp:
        return 0.0
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        raise fail(where, f"expirationTimestamp {stamp!r} is not RFC 3339") from None
    if moment.tzinfo is None:
        raise fail(where, f"expirationTimestamp {stamp!r} has no time zone")
    return moment.timestamp()
