"""braid-thin's own identity on a node: a kubeconfig carrying a short-lived token of a
ServiceAccount that may do only what braid-thin's calls need (``deploy/components/braid-thin``,
``docs/kubernetes.md``), as Calico's node agent keeps its CNI plugin's kubeconfig.

The daemon asks the API server for the token with a ``TokenRequest``
(https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/)
bound to its node's ``Node`` object, so the token names the node (user-info extra
``authentication.kubernetes.io/node-name``) and dies with it; an API server that does not bind
tokens to Nodes (before Kubernetes 1.31, or with ``ServiceAccountTokenNodeBinding`` off) is
asked again without the binding, and the log says so. The kubeconfig is written atomically
(a temporary file, fsynced, renamed), root's and 0600, and written again once four fifths of
the token's life have passed, or when the file is gone or was changed by someone else. A
failed request is tried again every ``RETRY_SECONDS``; the token written before stays until
it expires.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec

from braid.config.layers import DaemonConfig
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.errors import ApiError
from braid.k8s.kubeconfig import SERVICE_ACCOUNT_DIR, Credentials, file_signature

if TYPE_CHECKING:
    from braid.k8s.client import KubeClient

log = logging.getLogger("braid.k8s")
REFRESH_FRACTION = 0.8
RETRY_SECONDS = 30.0
# The API server's bounds on expirationSeconds: at least 10 minutes; a day is braid's.
MIN_TOKEN_SECONDS, MAX_TOKEN_SECONDS = 600, 86400
_REFUSED_BINDING = frozenset({400, 422})
THIN_ACCOUNT_NAME = "braid-thin"
# A namespace's name: an RFC 1123 label (at most 63 characters).
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class ThinIdentity:
    """Where the kubeconfig goes (this process's path), whose token it carries
    (``namespace/name``), the node it is bound to ("": none), and for how long (seconds)."""

    path: str
    account: str
    node: str
    seconds: int


def token_path(account: str) -> str:
    """The ServiceAccount's ``token`` subresource (``account`` is ``namespace/name``)."""
    namespace, sep, name = account.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise CniError(INVALID_CONFIG, f"thinServiceAccount {account!r} must be NAMESPACE/NAME")
    return (
        f"/api/v1/namespaces/{quote(namespace, safe='')}/serviceaccounts/"
        f"{quote(name, safe='')}/token"
    )


def account_of(account: str, account_dir: str = SERVICE_ACCOUNT_DIR) -> str:
    """``account`` (``thinServiceAccount``), or braid-thin in the namespace of the pod's own
    ServiceAccount when it is "" (so a deployment moved to another namespace needs no edit);
    code 7 outside a pod."""
    if account:
        token_path(account)
        return account
    try:
        namespace = Path(account_dir, "namespace").read_text(encoding="ascii")[:64].strip()
    except (OSError, UnicodeDecodeError):
        namespace = ""
    if not _NAMESPACE.fullmatch(namespace):
        raise CniError(
            INVALID_CONFIG,
            "thinServiceAccount is not set and braid does not run in a pod whose namespace "
            f"it can read ({account_dir}/namespace): set it to NAMESPACE/NAME",
        )
    return f"{namespace}/{THIN_ACCOUNT_NAME}"


def kubeconfig_text(creds: Credentials, token: str) -> bytes:
    """A kubeconfig for the API server of ``creds`` that presents ``token``."""
    cluster: dict[str, Any] = {"server": creds.server}
    ca = Path(creds.ca_file).read_bytes() if creds.ca_file else creds.ca_data.encode()
    if ca:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if creds.insecure:
        cluster["insecure-skip-tls-verify"] = True
    if creds.tls_server_name:
        cluster["tls-server-name"] = creds.tls_server_name
    if creds.proxy_url:
        cluster["proxy-url"] = creds.proxy_url
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "braid", "cluster": cluster}],
        "users": [{"name": "braid-thin", "user": {"token": token}}],
        "contexts": [{"name": "braid-thin", "context": {"cluster": "braid", "user": "braid-thin"}}],
        "current-context": "braid-thin",
    }
    return json.dumps(doc, indent=2).encode() + b"\n"  # JSON is YAML


def write_private(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all: root's (when this process is root), 0600."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # 0600
    try:
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        Path(temporary).replace(path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _expiry(status: dict[str, Any], asked: float) -> float:
    """The token's expiry (seconds since the epoch) from ``expirationTimestamp``."""
    stamp = status.get("expirationTimestamp")
    try:
        moment = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return asked
    return moment.timestamp()


class ThinTokenKeeper:
    """``look()`` (the daemon's chore, every second) keeps the kubeconfig fresh."""

    def __init__(
        self,
        client: KubeClient,
        identity: ThinIdentity,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.identity, self.clock = client, identity, clock
        self.path = Path(identity.path)
        self.bind_to_node = bool(identity.node)
        self.refresh_at = 0.0  # when the token written must be replaced
        self.expires = 0.0
        self.written: tuple[tuple[str, int, int, int], ...] = ()
        self._next_try = 0.0
        self._failing = False

    def due(self) -> bool:
        now = self.clock()
        if now < self._next_try:
            return False
        return now >= self.refresh_at or file_signature((str(self.path),)) != self.written

    def look(self) -> None:
        if not self.due():
            return
        try:
            self.refresh()
        except (CniError, OSError) as exc:
            self._next_try = self.clock() + RETRY_SECONDS
            if not self._failing:
                log.error("braid-thin's kubeconfig %s not refreshed: %s", self.path, exc)  # noqa: TRY400
            self._failing = True
            return
        if self._failing:
            log.info("braid-thin's kubeconfig %s refreshed again", self.path)
        self._failing = False

    def refresh(self) -> None:
        """Asks for a token and writes the kubeconfig carrying it."""
        asked = self.clock()
        status = self._request()
        token = status.get("token")
        if not isinstance(token, str) or not token:
            raise CniError(INVALID_CONFIG, "TokenRequest answered without a token")
        creds = self.client.reloader.current().credentials
        write_private(self.path, kubeconfig_text(creds, token))
        self.written = file_signature((str(self.path),))
        self.expires = _expiry(status, asked + self.identity.seconds)
        self.refresh_at = asked + (self.expires - asked) * REFRESH_FRACTION
        log.info(
            "braid-thin's kubeconfig %s: a token of %s%s, valid until %s",
            self.path,
            self.identity.account,
            f" bound to node {self.identity.node}" if self.bind_to_node else "",
            datetime.datetime.fromtimestamp(self.expires, datetime.UTC).isoformat(),
        )

    def _request(self) -> dict[str, Any]:
        try:
            return self._post(bound=self.bind_to_node)
        except ApiError as exc:
            if not self.bind_to_node or exc.status not in _REFUSED_BINDING:
                raise
            log.warning(
                "the API server does not bind tokens to Node %s (%s); braid-thin's token is "
                "bound to nothing but its expiry",
                self.identity.node,
                exc,
            )
            self.bind_to_node = False
            return self._post(bound=False)

    def _post(self, *, bound: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"audiences": [], "expirationSeconds": self.identity.seconds}
        if bound:
            spec["boundObjectRef"] = {
                "kind": "Node",
                "apiVersion": "v1",
                "name": self.identity.node,
            }
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = self.client.json(
            "POST",
            token_path(self.identity.account),
            body=msgspec.json.encode(body),
            what=f"TokenRequest for {self.identity.account}",
        )
        status = answer.get("status")
        return status if isinstance(status, dict) else {}


def keeper_of(
    config: DaemonConfig, local_path: str, node: str, client: KubeClient | None
) -> ThinTokenKeeper:
    """The keeper of ``thinKubeconfig`` (written at ``local_path``) for the daemon of
    ``node``; code 7 without an API client or with a malformed ``thinServiceAccount``."""
    if client is None:
        raise CniError(
            INVALID_CONFIG,
            "thinKubeconfig is set but the daemon has no Kubernetes API client to ask for "
            "braid-thin's token: set `kubeconfig` or run it in a pod",
        )
    identity = ThinIdentity(
        path=local_path,
        account=account_of(config.thin_service_account),
        node=node,
        seconds=config.thin_token_seconds,
    )
    return ThinTokenKeeper(client, identity)


def standalone_keeper(
    identity: ThinIdentity, kubeconfig: str, env: Mapping[str, str]
) -> ThinTokenKeeper:
    """A keeper outside the daemon (``braidctl install --thin-kubeconfig``): asking with the
    credentials of ``kubeconfig``, else of the pod's service account."""
    from braid.k8s.client import KubeClient  # noqa: PLC0415 - only where asked for
    from braid.k8s.credentials import CredentialReloader  # noqa: PLC0415
    from braid.k8s.kubeconfig import (  # noqa: PLC0415
        in_cluster_credentials,
        kubeconfig_credentials,
    )

    def load() -> Credentials:
        return kubeconfig_credentials(kubeconfig) if kubeconfig else in_cluster_credentials(env)

    identity = replace(identity, account=account_of(identity.account))
    return ThinTokenKeeper(KubeClient(CredentialReloader(load)), identity)
