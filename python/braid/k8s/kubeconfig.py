"""Reading credentials from a kubeconfig file or from the in-cluster service account.

The common kubeconfig forms are read here directly (server, CA file or data, bearer token or
``tokenFile``, client certificate and key files or data, ``insecure-skip-tls-verify``,
``tls-server-name``, ``proxy-url``), from one file or a ``$KUBECONFIG`` list merged as kubectl
merges it (``braid.k8s.kubeconfig_merge``), for the current context or a named one. Users with
``exec`` run their credential plugin (``braid.k8s.kubeconfig_exec``); users with
``auth-provider`` are handed to the ``kubernetes`` package's loader, imported only then.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from braid.k8s.kubeconfig_merge import fail, read_merged
from braid.k8s.proxy import checked_proxy_url

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class Credentials:
    """Where the API server is and how braid proves who it is. ``source`` names the origin
    for messages; ``files`` are the files whose change means "read me again"."""

    server: str
    source: str
    token: str = ""
    token_file: str = ""
    ca_file: str = ""
    ca_data: str = ""
    cert_file: str = ""
    key_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    insecure: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""
    files: tuple[str, ...] = ()
    expires: float = 0.0  # an exec plugin's token: seconds since the epoch; 0: never

    def bearer_token(self) -> str:
        """The token to send: ``token_file``'s content (read now) or ``token``."""
        if not self.token_file:
            return self.token
        try:
            return Path(self.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(self.source, f"cannot read token file {self.token_file}: {exc}") from None


def in_cluster_credentials(
    env: Mapping[str, str], account_dir: str = SERVICE_ACCOUNT_DIR
) -> Credentials:
    """The pod's service account: its projected token (rotated by the kubelet) and CA."""
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    source = "in-cluster service account"
    if not host or not port:
        raise fail(source, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    if ":" in host:
        host = f"[{host}]"
    token_file, ca_file = f"{account_dir}/token", f"{account_dir}/ca.crt"
    for path in (token_file, ca_file):
        if not Path(path).is_file():
            raise fail(source, f"{path} does not exist; is a service account token mounted?")
    return Credentials(
        server=f"https://{host}:{port}",
        source=source,
        token_file=token_file,
        ca_file=ca_file,
        files=(token_file, ca_file),
    )


def _decoded(value: Any, field: str, source: str) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise fail(source, f"{field} is not valid base64") from None


def kubeconfig_credentials(path: str | Sequence[str], *, context: str = "") -> Credentials:
    """Credentials of ``context`` (default: the current one) of the kubeconfig at ``path``,
    or of the ``$KUBECONFIG`` list ``path`` merged as kubectl merges it
    (``braid.k8s.kubeconfig_merge``)."""
    merged = read_merged(path)
    source = merged.source
    name = context or merged.current_context
    if not name:
        raise fail(source, "current-context is not set; pass a context")
    if name not in merged.entries["contexts"]:
        raise fail(source, f"no context named {name!r} in contexts")
    ctx = merged.entries["contexts"][name]
    cluster = merged.named("clusters", str(ctx.get("cluster", "")))
    user = merged.named("users", str(ctx.get("user", "")))
    if user.get("auth-provider"):
        from braid.k8s.kubeconfig_plugins import plugin_credentials  # noqa: PLC0415

        return plugin_credentials(merged.files, name, source)
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise fail(source, f"cluster {ctx.get('cluster')!r}: server must be an URL")
    creds = Credentials(
        server=server.rstrip("/"),
        source=source if not context else f"{source}, context {name}",
        token=str(user.get("token") or ""),
        token_file=str(user.get("tokenFile") or ""),
        ca_file=str(cluster.get("certificate-authority") or ""),
        ca_data=_decoded(cluster.get("certificate-authority-data"), "CA data", source).decode(
            "ascii", "replace"
        ),
        cert_file=str(user.get("client-certificate") or ""),
        key_file=str(user.get("client-key") or ""),
        cert_data=_decoded(user.get("client-certificate-data"), "certificate data", source),
        key_data=_decoded(user.get("client-key-data"), "key data", source),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        proxy_url=_proxy_url(cluster.get("proxy-url"), source),
    )
    if user.get("exec"):
        creds = _with_exec(creds, user["exec"], cluster)
    watched = (creds.token_file, creds.ca_file, creds.cert_file, creds.key_file)
    return replace(creds, files=merged.files + tuple(f for f in watched if f))


def _with_exec(creds: Credentials, spec: Any, cluster: dict[str, Any]) -> Credentials:
    """The plugin's answer in place of the user's token or client certificate."""
    from braid.k8s.kubeconfig_exec import exec_answer  # noqa: PLC0415

    answer = exec_answer(spec, cluster, creds.source)
    if answer.cert_data:
        creds = replace(creds, cert_file="", key_file="", cert_data=answer.cert_data,
                        key_data=answer.key_data)  # fmt: skip
    if answer.token:
        creds = replace(creds, token=answer.token, token_file="")
    return replace(creds, source=f"{creds.source} (exec user)", expires=answer.expires)


def _proxy_url(value: Any, source: str) -> str:
    if not value:
        return ""
    return checked_proxy_url(str(value), f"proxy-url of the cluster in {source}")


def file_signature(paths: tuple[str, ...]) -> tuple[tuple[str, int, int, int], ...]:
    """What tells a changed file: inode, size and modification time (a kubelet token
    rotation swaps a symlink, so the inode changes)."""
    found = []
    for path in paths:
        try:
            st = Path(path).stat()
        except OSError:
            found.append((path, -1, -1, -1))
        else:
            found.append((path, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(found)
