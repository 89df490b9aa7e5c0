"""The NAD webhook's certificates rotate with no request refused: two replicas share one
Secret with lifetimes of seconds (a serving certificate of 6 s, a CA of 18 s) while NADs are
checked without pause through the real API server with `failurePolicy: Fail`, so that any
moment the API server could not trust the replica it called would show as a refused request.
"""

from __future__ import annotations

import base64
import ssl
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import apiserver
import kubernetes.client
from nad_webhook_setup import CONFIGURATION, NAMESPACE, SECRET, Replica, installed
from test_cluster_nad_webhook import BAD_CONFIG, GOOD_CONFIG, nad
from test_k8s_status import wait_until

from braid.commands.nad_webhook_keeper import Keeper, Names
from braid.commands.nad_webhook_rotation import Policy
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.kubeconfig import kubeconfig_credentials

FLAGS = ("--serving-lifetime=6", "--ca-lifetime=18", "--check-interval=0.5", "--propagation=1.5")
RUN_FOR = 30.0


def secret_pems(core: kubernetes.client.CoreV1Api) -> tuple[str, str]:
    data = core.read_namespaced_secret(SECRET, NAMESPACE).data or {}
    text = {k: base64.b64decode(v).decode() for k, v in data.items()}
    return text.get("tls.crt", ""), text.get("ca.crt", "")


def check(api: kubernetes.client.CustomObjectsApi, body: dict[str, Any]) -> str:
    """'' when the NAD is accepted (dry run), else the API server's message."""
    group, version, plural = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"
    namespace = body["metadata"]["namespace"]
    try:
        api.create_namespaced_custom_object(group, version, namespace, plural, body, dry_run="All")
    except kubernetes.client.ApiException as exc:
        return str(exc.body)
    return ""


def test_certificates_rotate_with_no_request_refused(
    kube_apiserver: apiserver.ApiServer, kube_namespace: str, tmp_path: Path
) -> None:
    good, bad = nad(kube_namespace, "good", GOOD_CONFIG), nad(kube_namespace, "bad", BAD_CONFIG)
    with installed(kube_apiserver, tmp_path, failure_policy="Fail") as (config, port, _):
        first = Replica(config, port, tmp_path / "first.log", *FLAGS)
        # The second replica answers on a port the API server never calls: it shows that
        # both serve the one Secret's certificate, and it races the first to renew it.
        second = Replica(config, apiserver.free_port(), tmp_path / "second.log", *FLAGS)
        try:
            first.wait_serving()
            second.wait_serving()
            with kube_apiserver.api_client("admin") as admin:
                api = kubernetes.client.CustomObjectsApi(admin)
                core = kubernetes.client.CoreV1Api(admin)
                assert wait_until(lambda: check(api, good) == "", timeout=30)
                serving, cas, failures, rounds = set(), set(), [], 0
                deadline = time.monotonic() + RUN_FOR
                while time.monotonic() < deadline:
                    rounds += 1
                    if message := check(api, good):
                        failures.append(f"good NAD refused: {message}")
                    if "denied the request" not in (message := check(api, bad)):
                        failures.append(f"bad NAD not refused by the webhook: {message}")
                    tls, ca = secret_pems(core)
                    serving.add(tls)
                    cas.add(ca)
                assert not failures, failures[:5]
                assert rounds > 30
                assert len(serving) >= 4, "the serving certificate was not renewed"
                assert len(cas) >= 2, "the CA was not renewed"

                def both_serve_the_secrets() -> bool:
                    der = ssl.PEM_cert_to_DER_cert(secret_pems(core)[0])
                    return first.peer_certificate() == der == second.peer_certificate()

                assert wait_until(both_serve_the_secrets, timeout=10)
        finally:
            first.stop()
            second.stop()


def keeper(kubeconfig: Path, clock: Any = time.time) -> Keeper:
    reloader = CredentialReloader(lambda: kubeconfig_credentials(str(kubeconfig)))
    policy = Policy(ca_lifetime=600, serving_lifetime=60, propagation=5, hosts=("127.0.0.1",))
    return Keeper(
        KubeClient(reloader), Names(NAMESPACE, SECRET, CONFIGURATION), policy, clock=clock
    )


def test_a_replica_that_loses_the_race_takes_the_winners_certificates(
    kube_apiserver: apiserver.ApiServer, tmp_path: Path
) -> None:
    with installed(kube_apiserver, tmp_path) as (config, _, _):
        first, second = keeper(config), keeper(config, clock=lambda: time.time() + 50)
        made = first.sync()
        stale = first._read()  # what the first replica read before the second wrote
        # The second replica's clock says the serving certificate is due: it renews it.
        renewed = second.sync()
        assert renewed.serving != made.serving
        assert renewed.ca == made.ca
        # The first replica's write from its stale read is refused (409), never applied.
        assert first._write(stale, replace(made, hosts="overwritten")) is False
        assert first.sync() == renewed  # and it takes the winner's certificates
        assert first.context is not None
