"""The NAD webhook's certificates kept in its Secret, and its CA bundle in its
ValidatingWebhookConfiguration, by every replica at once.

Each round a replica reads the Secret; when ``nad_webhook_rotation.renewed`` says it should
change, the replica writes it with the ``resourceVersion`` it read (a replica that lost the
race gets 409 Conflict and reads the winner's instead): replicas never overwrite each other.
Then it loads the serving pair it read, if new, and makes the webhook configuration's
``caBundle`` the Secret's bundle (a JSON patch that tests the configuration's
``resourceVersion``). Its identity needs get and update of that one Secret and get and patch
of that one configuration, nothing more.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from braid.commands.nad_webhook_rotation import Material, Policy, material_from_data, renewed
from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError

log = logging.getLogger("braid.nad_webhook")
_WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MAX_SECRET_BYTES = 1 << 20
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class Names:
    namespace: str
    secret: str
    webhook_configuration: str


def _decoded(data: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (data if isinstance(data, dict) else {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            continue  # not ours: renewed() makes it again
    return out


def serving_context(pair_cert: str, pair_key: str) -> ssl.SSLContext:
    """A TLS server context with this certificate and key (TLS 1.2 at least)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="braid-nad-webhook-") as name:
        work = Path(name)
        work.chmod(0o700)
        (work / "tls.crt").write_text(pair_cert)
        (work / "tls.key").write_text(pair_key)
        context.load_cert_chain(work / "tls.crt", work / "tls.key")
    return context


class Keeper:
    """One replica's view of the Secret; ``context`` is the TLS context to serve with."""

    def __init__(
        self,
        client: KubeClient,
        names: Names,
        policy: Policy,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.names = names
        self.policy = policy
        self.clock = clock
        self.context: ssl.SSLContext | None = None
        self._serving: tuple[str, str] | None = None
        self.loaded = threading.Event()

    @property
    def _secret_path(self) -> str:
        n = self.names
        return f"/api/v1/namespaces/{quote(n.namespace)}/secrets/{quote(n.secret)}"

    def _read(self) -> dict[str, Any]:
        return self.client.json("GET", self._secret_path, max_body=MAX_SECRET_BYTES)

    def _write(self, secret: dict[str, Any], material: Material) -> bool:
        """Writes ``material`` over the Secret as read; False when another replica wrote
        first (409)."""
        body = dict(secret)
        body["data"] = {
            k: base64.b64encode(v.encode()).decode() for k, v in material.to_data().items()
        }
        try:
            self.client.json("PUT", self._secret_path, body=json.dumps(body).encode())
        except ApiError as exc:
            if exc.status == 409:
                log.info("another replica renewed the certificates first; reading theirs")
                return False
            raise
        return True

    def sync(self) -> Material:
        """One round: renews the Secret if due (re-reading after a lost race), loads its
        serving pair, and brings the webhook configuration's CA bundle in line."""
        for _ in range(3):
            secret = self._read()
            material = material_from_data(_decoded(secret.get("data")))
            wanted = renewed(material, self.policy, self.clock())
            if wanted is None:
                break
            if self._write(secret, wanted):
                log.info("renewed the webhook's certificates in Secret %s", self.names.secret)
                material = wanted
                break
        self._load(material)
        self._publish_bundle(material.bundle())
        return material

    def _load(self, material: Material) -> None:
        pair = material.serving
        if pair is None or (pair.cert, pair.key) == self._serving:
            return
        self.context = serving_context(pair.cert, pair.key)
        self._serving = (pair.cert, pair.key)
        self.loaded.set()
        log.info("serving with the certificate of Secret %s", self.names.secret)

    def _publish_bundle(self, bundle: str) -> None:
        if not bundle:
            return
        path = f"{_WEBHOOKS}/{quote(self.names.webhook_configuration)}"
        config = self.client.json("GET", path)
        encoded = base64.b64encode(bundle.encode()).decode()
        webhooks = config.get("webhooks")
        patch: list[dict[str, Any]] = [
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": (config.get("metadata") or {}).get("resourceVersion")},
        ]  # fmt: skip
        for index, hook in enumerate(webhooks if isinstance(webhooks, list) else []):
            client_config = hook.get("clientConfig") if isinstance(hook, dict) else None
            if isinstance(client_config, dict) and client_config.get("caBundle") != encoded:
                at = f"/webhooks/{index}/clientConfig/caBundle"
                patch.append({"op": "add", "path": at, "value": encoded})
        if len(patch) == 1:
            return
        body = json.dumps(patch).encode()
        try:
            self.client.json("PATCH", path, body=body, content_type=JSON_PATCH)
        except ApiError as exc:
            if exc.status not in (409, 422):
                raise
            return  # changed meanwhile: the next round reads it again
        log.info("wrote the CA bundle into %s", self.names.webhook_configuration)

    def run(self, interval: float, stop: threading.Event) -> None:
        """``sync`` every ``interval`` seconds until ``stop``; a failed round is logged and
        tried again sooner."""
        while not stop.is_set():
            wait = interval
            try:
                self.sync()
            except (CniError, OSError) as exc:
                log.warning(
                    "certificate round failed: %s", exc.msg if isinstance(exc, CniError) else exc
                )
                wait = min(interval, 5.0)
            stop.wait(wait)
