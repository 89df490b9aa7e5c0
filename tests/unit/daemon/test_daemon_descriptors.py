"""The descriptor limit: raised to the hard limit at start, and shared so that the servers'
clients never reach it."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from braid.daemon.descriptors import budget_of, most_running
from braid.daemon.scheduler import LENDS_PER_SLOT, Scheduler
from braid.daemon.settings import (
    BASE_DESCRIPTORS,
    CONNECTION_HEADROOM,
    DESCRIPTORS_PER_SLOT,
    MAX_PROBE_CONNECTIONS,
    DaemonSettings,
)

RAISE = """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
from braid.daemon.descriptors import raise_descriptor_limit
in_force = raise_descriptor_limit()
print(in_force, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)
"""


def settings(concurrency: int = 4, queue: int = 512) -> DaemonSettings:
    return DaemonSettings(Path("/run/braid"), concurrency, queue, "")


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    done = subprocess.run([sys.executable, "-c", RAISE], capture_output=True, text=True, check=True)
    in_force, soft, hard = map(int, done.stdout.split())
    assert hard > 256, "the test needs a hard limit above 256"
    assert in_force == soft == hard


def test_the_servers_stay_within_a_limit_with_room_for_the_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "braid.daemon"):
        budget = budget_of(settings(queue=2048), 2048)
    own = BASE_DESCRIPTORS + 4 * (1 + LENDS_PER_SLOT) * DESCRIPTORS_PER_SLOT
    assert budget.probe_connections == MAX_PROBE_CONNECTIONS
    assert own + budget.probe_connections + budget.socket_connections <= 2048
    assert budget.socket_connections == 2048 - own - MAX_PROBE_CONNECTIONS
    assert "leaves room for" in caplog.text


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_descriptors_are_kept_for_every_request_that_may_run(concurrency: int) -> None:
    """A request on a lent slot holds its delegates' pipes, record and locks as one on a
    slot does: the reserve counts every request the scheduler lets run at once."""
    most = Scheduler(concurrency=concurrency, queue_size=0).most_executing
    assert most_running(concurrency) == most
    own = BASE_DESCRIPTORS + most * DESCRIPTORS_PER_SLOT
    budget = budget_of(settings(concurrency=concurrency, queue=1024), own + 43)
    assert budget.probe_connections == 43 // 4
    assert budget.socket_connections == 43 - 43 // 4


def test_a_large_limit_leaves_the_connection_bound_as_it_is() -> None:
    budget = budget_of(settings(), 1 << 20)
    assert budget.socket_connections == 4 + 512 + CONNECTION_HEADROOM
    assert budget.probe_connections == MAX_PROBE_CONNECTIONS


def test_a_tiny_limit_still_leaves_one_connection_each() -> None:
    budget = budget_of(settings(concurrency=64), 300)
    assert budget.socket_connections >= 1
    assert budget.probe_connections >= 1
