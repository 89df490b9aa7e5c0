"""Reading credentials from a kubeconfig file or from the in-cluster service account.

The common kubeconfig forms are read here directly (server, CA file or data, bearer token or
``tokenFile``, client certificate and key files or data, ``insecure-skip-tls-verify``,
``tls-server-name``, ``proxy-url``). Users with ``exec`` or ``auth-provider`` are handed to
the ``kubernetes`` package's loader, imported only then. Relative paths are relative to the
kubeconfig's folder.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from braid.errors import INVALID_CONFIG, CniError
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

    def bearer_token(self) -> str:
        """The token to send: ``token_file``'s content (read now) or ``token``."""
        if not self.token_file:
            return self.token
        try:
            return Path(self.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail(self.source, f"cannot read token file {self.token_file}: {exc}") from None


def _fail(source: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"Kubernetes credentials ({source}): {msg}")


def in_cluster_credentials(
    env: Mapping[str, str], account_dir: str = SERVICE_ACCOUNT_DIR
) -> Credentials:
    """The pod's service account: its projected token (rotated by the kubelet) and CA."""
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    source = "in-cluster service account"
    if not host or not port:
        raise _fail(source, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    if ":" in host:
        host = f"[{host}]"
    token_file, ca_file = f"{account_dir}/token", f"{account_dir}/ca.crt"
    for path in (token_file, ca_file):
        if not Path(path).is_file():
            raise _fail(source, f"{path} does not exist; is a service account token mounted?")
    return Credentials(
        server=f"https://{host}:{port}",
        source=source,
        token_file=token_file,
        ca_file=ca_file,
        files=(token_file, ca_file),
    )


def _named(doc: dict[str, Any], section: str, name: str, source: str) -> dict[str, Any]:
    key = section[:-1]
    for item in doc.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get(key) or {}
            if not isinstance(value, dict):
                raise _fail(source, f"{section} entry {name!r}: field {key} must be a mapping")
            return value
    raise _fail(source, f"no {key} named {name!r} in {section}")


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise _fail(f"kubeconfig {path}", f"cannot be read: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(f"kubeconfig {path}", "not a mapping")
    return doc


def _decoded(value: Any, field: str, source: str) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise _fail(source, f"{field} is not valid base64") from None


def _path(value: Any, base: Path) -> str:
    if not value:
        return ""
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else base / path)


def kubeconfig_credentials(path: str) -> Credentials:
    """Credentials of the current context of the kubeconfig at ``path``."""
    file = Path(path)
    source = f"kubeconfig {file}"
    doc = _read_kubeconfig(file)
    context_name = doc.get("current-context")
    if not isinstance(context_name, str) or not context_name:
        raise _fail(source, "current-context is not set")
    context = _named(doc, "contexts", context_name, source)
    cluster = _named(doc, "clusters", str(context.get("cluster", "")), source)
    user = _named(doc, "users", str(context.get("user", "")), source)
    if user.get("exec") or user.get("auth-provider"):
        from braid.k8s.kubeconfig_plugins import plugin_credentials  # noqa: PLC0415

        return plugin_credentials(path, source)
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise _fail(source, f"cluster {context.get('cluster')!r}: server must be an URL")
    base = file.parent
    creds = Credentials(
        server=server.rstrip("/"),
        source=source,
        token=str(user.get("token") or ""),
        token_file=_path(user.get("tokenFile"), base),
        ca_file=_path(cluster.get("certificate-authority"), base),
        ca_data=_decoded(cluster.get("certificate-authority-data"), "CA data", source).decode(
            "ascii", "replace"
        ),
        cert_file=_path(user.get("client-certificate"), base),
        key_file=_path(user.get("client-key"), base),
        cert_data=_decoded(user.get("client-certificate-data"), "certificate data", source),
        key_data=_decoded(user.get("client-key-data"), "key data", source),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        proxy_url=_proxy_url(cluster.get("proxy-url"), source),
    )
    watched = (str(file), creds.token_file, creds.ca_file, creds.cert_file, creds.key_file)
    return _with_files(creds, tuple(f for f in watched if f))


def _proxy_url(value: Any, source: str) -> str:
    if not value:
        return ""
    return checked_proxy_url(str(value), f"proxy-url of the cluster in {source}")


def _with_files(creds: Credentials, files: tuple[str, ...]) -> Credentials:
    return Credentials(**{**creds.__dict__, "files": files})


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
