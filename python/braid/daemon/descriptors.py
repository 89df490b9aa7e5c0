"""The daemon's file descriptors: the process limit, and how many its servers may use.

At start the soft ``RLIMIT_NOFILE`` is raised to the hard limit (the common soft limit, 1024,
is far below what a node's hard limit allows). Its clients then share what the limit leaves
once the daemon's own needs are kept aside (``settings.BASE_DESCRIPTORS``, and
``settings.DESCRIPTORS_PER_SLOT`` for each request that may run: one on each slot, and up to
``scheduler.LENDS_PER_SLOT`` per slot on lent slots while their delegates run): the HTTP
endpoint at most ``MAX_PROBE_CONNECTIONS``, the unix socket the rest, up to its own bound. No
client of either server can therefore take the descriptors a CNI call needs to run its
delegates.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass
from pathlib import Path

from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.scheduler import most_executing
from braid.daemon.settings import (
    BASE_DESCRIPTORS,
    DESCRIPTORS_PER_SLOT,
    MAX_PROBE_CONNECTIONS,
    DaemonSettings,
)

log = logging.getLogger(DAEMON_LOGGER)
NR_OPEN = Path("/proc/sys/fs/nr_open")  # the kernel's ceiling for a process's descriptors
FALLBACK_CEILING = 1 << 20


def _ceiling(hard: int) -> int:
    """The hard limit as a number: ``RLIM_INFINITY`` means the kernel's own ceiling."""
    if hard != resource.RLIM_INFINITY:
        return hard
    try:
        return int(NR_OPEN.read_text())
    except (OSError, ValueError):
        return FALLBACK_CEILING


def raise_descriptor_limit() -> int:
    """Raises the soft descriptor limit to the hard one (logged); returns the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _ceiling(hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError) as exc:
            log.warning("descriptor limit stays %d: cannot raise it to %d: %s", soft, target, exc)
            return soft
        log.info("descriptor limit raised from %d to %d (the hard limit)", soft, target)
        return target
    log.info("descriptor limit %d", soft)
    return _ceiling(soft)


def most_running(concurrency: int) -> int:
    """The most requests that run at once with ``concurrency`` slots
    (``scheduler.most_executing``, which ``Scheduler.most_executing`` is too)."""
    return most_executing(concurrency)


@dataclass(frozen=True)
class DescriptorBudget:
    """How many connections each server may hold at once."""

    limit: int
    socket_connections: int
    probe_connections: int


def budget_of(settings: DaemonSettings, limit: int | None = None) -> DescriptorBudget:
    """The servers' shares of ``limit`` (the soft limit now, by default): the daemon's own needs
    first, then the HTTP endpoint's few, then the unix socket's connections, at most its
    bound (logged when the limit cuts it)."""
    if limit is None:
        limit = _ceiling(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    own = BASE_DESCRIPTORS + most_running(settings.concurrency) * DESCRIPTORS_PER_SLOT
    probes = max(1, min(MAX_PROBE_CONNECTIONS, (limit - own) // 4))
    wanted = settings.wanted_connections
    left = limit - own - probes
    connections = max(1, min(wanted, left))
    if connections < wanted:
        log.warning(
            "the descriptor limit %d leaves room for %d connections on the socket, not %d: "
            "raise the daemon's hard RLIMIT_NOFILE (LimitNOFILE, ulimit -Hn) or lower "
            "daemonConcurrency and daemonQueueSize",
            limit,
            connections,
            wanted,
        )
    return DescriptorBudget(limit, connections, probes)
