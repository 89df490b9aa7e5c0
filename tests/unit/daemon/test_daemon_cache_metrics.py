"""The caches' metrics (braid.daemon.metrics ``watch_caches``): read from the caches at each
scrape, every reason present for every cache."""

from __future__ import annotations

from braid.daemon.metrics import DaemonMetrics
from braid.daemon.scheduler import Scheduler


def test_the_caches_sizes_and_refusals_are_exposed_when_scraped() -> None:
    metrics = DaemonMetrics(Scheduler(concurrency=1, queue_size=1))
    stats = [("nads", 3, 4096, {"oversized": 2}), ("claims", 0, 0, {})]
    metrics.watch_caches(lambda: stats)
    text = metrics.exposition().decode()
    for line in (
        'braid_daemon_cache_bytes{cache="nads"} 4096.0',
        'braid_daemon_cache_objects{cache="nads"} 3.0',
        'braid_daemon_cache_refused_total{cache="nads",reason="oversized"} 2.0',
        'braid_daemon_cache_refused_total{cache="nads",reason="bound"} 0.0',
        'braid_daemon_cache_refused_total{cache="claims",reason="bound"} 0.0',
    ):
        assert line in text.splitlines()
    stats[0] = ("nads", 1, 100, {"oversized": 2, "bound": 5})
    text = metrics.exposition().decode()
    assert 'braid_daemon_cache_refused_total{cache="nads",reason="bound"} 5.0' in text
    assert 'braid_daemon_cache_bytes{cache="nads"} 100.0' in text
