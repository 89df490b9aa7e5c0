"""Credentials that follow rotation without a restart (Multus's "Unauthorized after an hour").

Before each request braid compares the signature (inode, size, mtime) of every file the
credentials came from (the kubeconfig, a token file, the CA, a client certificate and key);
when one changed, or when an exec plugin's token reached its ``expirationTimestamp``, it reads
them all again (and so runs the plugin again). A 401 forces the same re-read (the client then
retries once). The TLS material has its own generation number, so the HTTP client rebuilds
its connection pool only when the CA, the client certificate or the proxy changed.
"""

from __future__ import annotations

import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.kubeconfig import Credentials, file_signature


@dataclass(frozen=True)
class Snapshot:
    """The credentials to use now: the bearer token as read, and the TLS generation."""

    credentials: Credentials
    token: str
    tls_generation: int


def _tls_identity(creds: Credentials) -> tuple[object, ...]:
    files = tuple(f for f in (creds.ca_file, creds.cert_file, creds.key_file) if f)
    return (
        creds.server,
        creds.ca_data,
        creds.cert_data,
        creds.key_data,
        creds.insecure,
        creds.tls_server_name,
        creds.proxy_url,
        file_signature(files),
    )


class CredentialReloader:
    """Thread-safe holder of the current credentials; ``load`` reads them from their source."""

    def __init__(self, load: Callable[[], Credentials]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._generation = 0
        self._credentials = load()
        self._token = self._credentials.bearer_token()
        self._signature = file_signature(self._credentials.files)
        self._tls = _tls_identity(self._credentials)
        self.reloads = 0

    def current(self) -> Snapshot:
        """The credentials, read again first when one of their files changed or they
        expired."""
        with self._lock:
            expires = self._credentials.expires
            if (expires and time.time() >= expires) or file_signature(
                self._credentials.files
            ) != self._signature:
                self._reload()
            return self._snapshot()

    def reload(self) -> Snapshot:
        """Reads the credentials again whatever the files say (after a 401)."""
        with self._lock:
            self._reload()
            return self._snapshot()

    def _snapshot(self) -> Snapshot:
        return Snapshot(self._credentials, self._token, self._generation)

    def _reload(self) -> None:
        credentials = self._load()
        self._token = credentials.bearer_token()
        self._credentials = credentials
        self._signature = file_signature(credentials.files)
        tls = _tls_identity(credentials)
        if tls != self._tls:
            self._tls = tls
            self._generation += 1
        self.reloads += 1


def ssl_context(creds: Credentials) -> ssl.SSLContext:
    """The TLS context for ``creds``: its CA (else the system's), its client certificate."""
    try:
        context = ssl.create_default_context(
            cafile=creds.ca_file or None, cadata=creds.ca_data or None
        )
        if creds.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if creds.cert_file or creds.cert_data:
            _load_client_certificate(context, creds)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise CniError(
            INVALID_CONFIG,
            f"Kubernetes credentials ({creds.source}): unusable CA or client certificate",
            str(exc),
        ) from None
    return context


def _load_client_certificate(context: ssl.SSLContext, creds: Credentials) -> None:
    if creds.cert_file:
        context.load_cert_chain(creds.cert_file, creds.key_file or None)
        return
    # ssl reads certificates from files only: a private folder, removed at once.
    with tempfile.TemporaryDirectory(prefix="braid-tls-") as folder:
        cert, key = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        cert.write_bytes(creds.cert_data)
        key.touch(mode=0o600)
        key.write_bytes(creds.key_data)
        context.load_cert_chain(str(cert), str(key) if creds.key_data else None)
