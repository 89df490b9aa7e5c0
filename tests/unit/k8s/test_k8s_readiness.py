"""Readiness follows the caches (issue 25): a cache that has failed to list, watch or read for
longer than STALE_SECONDS is named, and /readyz answers 503 with that detail until it syncs."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import cast

from braid.daemon.probes import route
from braid.daemon.service import DaemonService
from braid.k8s.caches import STALE_SECONDS, ClusterCaches
from braid.k8s.client import KubeClient


def test_a_cache_failing_for_long_is_stale_and_one_that_recovers_is_not() -> None:
    caches = ClusterCaches(cast(KubeClient, None), node_name="n", claims=True)
    assert caches.stale() == []
    assert caches.claims is not None
    caches.claims.broken_since = time.monotonic() - STALE_SECONDS - 5
    caches.nads.broken_since = time.monotonic() - 1  # failing, but not for long
    assert [name for name, _ in caches.stale()] == ["claims"]
    assert caches.stale()[0][1] > STALE_SECONDS
    caches.claims.broken_since = None
    assert caches.stale() == []


def test_readyz_is_withdrawn_with_the_stale_cache_named() -> None:
    detail = ["cache pods not in sync for 75 s"]
    cluster = SimpleNamespace(not_in_sync=lambda: detail[0])
    service = cast(DaemonService, SimpleNamespace(ready=True, cluster=cluster))
    assert route(service, "/readyz") == (
        503, "text/plain", b"not ready: cache pods not in sync for 75 s\n"
    )  # fmt: skip
    detail[0] = ""
    assert route(service, "/readyz") == (200, "text/plain", b"ready\n")
    service.ready = False
    assert route(service, "/readyz")[0] == 503
