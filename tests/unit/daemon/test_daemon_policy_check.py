"""The daemon's admission check (``braid.daemon.policy_check``) without an API server: its
gauge keeps one series, the reason of the last verdict; refused writes are counted by who
refused them and wake the check; ``/readyz?verbose`` shows it and readiness does not depend on
it. The real answers are the cluster tier's (tests/cluster/test_daemon_k8s_admission.py)."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any, cast

from prometheus_client import CollectorRegistry, generate_latest

from braid.daemon.policy_check import PolicyCheck
from braid.daemon.probes import route
from braid.daemon.service import DaemonService
from braid.k8s.admission_check import ENFORCED, MISSING, UNKNOWN, PolicyVerdict
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError, error_for_status

ADMISSION = (
    "ValidatingAdmissionPolicy 'braid-network-status-only' with binding "
    "'braid-network-status-only' denied request: braid's service account must use a token "
    "bound to a pod on a node"
)


def exposed(registry: CollectorRegistry) -> list[str]:
    return [
        line
        for line in generate_latest(registry).decode().splitlines()
        if line.startswith("braid_") and not line.startswith("#")
    ]


def forbidden(message: str) -> ApiError:
    body = json.dumps({"kind": "Status", "message": message}).encode()
    return error_for_status("PATCH pods/status ns/web", 403, body, identity="braid")


def check(registry: CollectorRegistry, pod: tuple[str, str] | None = None) -> PolicyCheck:
    return PolicyCheck(cast(KubeClient, None), lambda: pod, registry, period=600)


def test_one_series_the_last_verdicts_reason() -> None:
    registry = CollectorRegistry()
    watch = check(registry)
    assert 'braid_daemon_admission_policy_enforced{reason="unknown"} 0.0' in exposed(registry)
    assert watch.check().reason == UNKNOWN  # no pod of the node to ask about
    assert "no pod of this node" in watch.verdict.detail
    watch._record(PolicyVerdict(ENFORCED, "refused"))
    watch._record(PolicyVerdict(MISSING, "accepted"))
    series = [s for s in exposed(registry) if s.startswith("braid_daemon_admission")]
    assert series == ['braid_daemon_admission_policy_enforced{reason="missing"} 0.0']
    watch._record(PolicyVerdict(ENFORCED, "refused"))
    series = [s for s in exposed(registry) if s.startswith("braid_daemon_admission")]
    assert series == ['braid_daemon_admission_policy_enforced{reason="enforced"} 1.0']


def test_refused_writes_are_counted_by_who_refused_them() -> None:
    registry = CollectorRegistry()
    watch = check(registry)
    watch.write_refused(forbidden(f'pods "web" is forbidden: {ADMISSION}'))
    watch.write_refused(forbidden('pods "web" is forbidden: User "x" cannot patch'))
    watch.write_refused(error_for_status("PATCH", 500, b"oops", identity="braid"))
    lines = exposed(registry)
    assert 'braid_daemon_status_writes_refused_total{by="admission"} 1.0' in lines
    assert 'braid_daemon_status_writes_refused_total{by="authorization"} 1.0' in lines
    assert watch.refusals == 2
    assert watch._wake.is_set()  # a refusal by admission asks again
    detail = watch.detail()
    assert detail[0] == "admission policy: unknown: not checked yet"
    assert detail[1].startswith("network-status writes refused: 2, the last by authorization")


def test_readyz_verbose_shows_the_detail_and_readiness_ignores_it() -> None:
    registry = CollectorRegistry()
    watch = check(registry)
    watch._record(PolicyVerdict(MISSING, "a dry-run label change was accepted"))
    cluster = SimpleNamespace(not_in_sync=lambda: "", details=watch.detail)
    service = cast(DaemonService, SimpleNamespace(ready=True, cluster=cluster, follower=None))
    assert route(service, "/readyz") == (200, "text/plain", b"ready\n")
    assert route(service, "/readyz?verbose") == (
        200, "text/plain",
        b"ready\nadmission policy: missing: a dry-run label change was accepted\n",
    )  # fmt: skip
    assert route(service, "/healthz?verbose")[2] == b"ok\n"


def test_the_thread_checks_at_start_and_stops() -> None:
    registry = CollectorRegistry()
    asked: list[Any] = []
    done = threading.Event()

    def pick() -> tuple[str, str] | None:
        asked.append(1)
        done.set()
        return None

    watch = PolicyCheck(cast(KubeClient, None), pick, registry, period=600, retry=600)
    watch.start()
    assert done.wait(5)
    watch.stop()
    assert not watch._thread.is_alive()
    assert asked == [1]
