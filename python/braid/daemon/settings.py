"""The daemon's settings: from braid's configuration file, then the command line.

Configuration keys (in braid's conf or conflist, beside the engine's own keys):
``daemonSocketDir`` (default ``/run/braid``), ``daemonConcurrency`` (0: twice the cores),
``daemonQueueSize`` (512), ``daemonMetricsAddress`` (``127.0.0.1:9190``; empty: no HTTP
endpoint for metrics, ``/healthz`` and ``/readyz``) and ``daemonHealthAddress``
(``127.0.0.1:9191``; empty: none), the endpoint of ``/healthz`` and ``/readyz`` alone that
kubelet's probes ask, apart from the metrics port; ``daemonMetricsAuth`` (``none``, or
``kubernetes``: bearer tokens reviewed by the API server, ``braid.daemon.metrics_auth``).

With the Kubernetes store the daemon watches the pods of its node: the node's name comes from
``--node-name``, else ``BRAID_NODE_NAME``, else ``NODE_NAME`` (the DaemonSet sets it from
``spec.nodeName``), else the host name. Readiness waits for the caches at most
``--cache-sync-seconds`` (20 s, as Multus's informers do).

The bounds on what clients may hold (``docs/daemon.md``, "Bounds") are the constants below:
the unix socket's connections (``concurrency + queue + CONNECTION_HEADROOM`` unless
``--max-connections`` says otherwise, and never more than the descriptor limit leaves), the
seconds a client has to send its whole frame, the request bytes held at once, and the HTTP
endpoint's connections, idle time and request size.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from braid.config.layers import DaemonConfig
from braid.errors import INVALID_CONFIG, CniError

SOCKET_NAME = "braid.sock"
DEFAULT_DRAIN_SECONDS = 60.0
DEFAULT_CACHE_SYNC_SECONDS = 20.0
DEFAULT_WATCH_SECONDS = 300
DEFAULT_ADMISSION_CHECK_SECONDS = 600.0
NODE_NAME_VARIABLES = ("BRAID_NODE_NAME", "NODE_NAME")

# Unix socket connections beyond the requests the scheduler admits (``concurrency + queue``):
# room for health probes and for refusing the excess with an answer.
CONNECTION_HEADROOM = 32
# A client has this long, from its connection, to send its whole frame (the shim sends it at
# once); then it is answered with code 4 and closed.
DEFAULT_FRAME_SECONDS = 3.0
MAX_FRAME_SECONDS = 60.0
# Request frame bytes held at once, all connections together (one frame: ``MAX_FRAME``, 4 MiB).
# A connection whose frame would go beyond it is answered with code 11 and closed.
MAX_HELD_FRAME_BYTES = 8 << 20
# The HTTP endpoint (/metrics, /healthz, /readyz): connections at once, the seconds to send a
# request head (and, once answered, to take the answer), the head's size.
MAX_PROBE_CONNECTIONS = 32
# The health endpoint's connections at once (kubelet probes one at a time; counted in
# ``BASE_DESCRIPTORS``).
MAX_HEALTH_CONNECTIONS = 8
PROBE_IDLE_SECONDS = 2.0
MAX_PROBE_REQUEST_BYTES = 8192
# Descriptors kept out of the connections' reach: the interpreter, logs, listeners, the
# Kubernetes client, spare record files (``BASE_DESCRIPTORS``), and each running request's
# delegates' pipes, record, locks and namespace handles (``DESCRIPTORS_PER_SLOT``).
BASE_DESCRIPTORS = 256
DESCRIPTORS_PER_SLOT = 32


@dataclass(frozen=True)
class DaemonSettings:
    socket_dir: Path
    concurrency: int
    queue_size: int
    metrics_address: str
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    node_name: str = ""
    cache_sync_seconds: float = DEFAULT_CACHE_SYNC_SECONDS
    watch_seconds: int = DEFAULT_WATCH_SECONDS
    # How often the admission policy is checked (``braid.daemon.policy_check``; 0: never).
    admission_check_seconds: float = DEFAULT_ADMISSION_CHECK_SECONDS
    # Where the node's root filesystem is ("" : this process's own root).
    host_root: str = ""
    # The node's CNI configuration directory, where the daemon keeps braid's conflist ("": it
    # writes none).
    cni_conf_dir: str = ""
    # Unix socket connections at once (0: ``concurrency + queue_size + CONNECTION_HEADROOM``).
    max_connections: int = 0
    frame_seconds: float = DEFAULT_FRAME_SECONDS
    max_held_frame_bytes: int = MAX_HELD_FRAME_BYTES
    # HOST:PORT of the health endpoint (/healthz, /readyz; "": none).
    health_address: str = ""
    # Who may read the metrics endpoint: "none" (anyone) or "kubernetes".
    metrics_auth: str = "none"

    @property
    def wanted_connections(self) -> int:
        """The unix socket's connection bound before the descriptor limit is considered."""
        return self.max_connections or self.concurrency + self.queue_size + CONNECTION_HEADROOM

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / SOCKET_NAME

    def metrics_endpoint(self) -> tuple[str, int] | None:
        """``(host, port)`` of the metrics endpoint, or None when it is disabled."""
        return endpoint_of("daemonMetricsAddress", self.metrics_address)

    def health_endpoint(self) -> tuple[str, int] | None:
        """``(host, port)`` of the health endpoint, or None when it is disabled."""
        return endpoint_of("daemonHealthAddress", self.health_address)


def endpoint_of(key: str, address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``address`` (configuration key ``key``), None when it is empty."""
    if not address:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise CniError(INVALID_CONFIG, f"{key} {address!r} must be HOST:PORT (or empty)")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 - an explicit ':PORT'


def node_name_of(flag: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """The node's name and where it came from (the flag, a variable, or the host name)."""
    if flag:
        return flag, "--node-name"
    for variable in NODE_NAME_VARIABLES:
        if env.get(variable):
            return env[variable], variable
    # The kubelet's default node name: the host name, lower-cased.
    return socket.gethostname().lower(), "the host name"


def default_concurrency() -> int:
    return 2 * (os.cpu_count() or 1)


def settings_from(
    config: DaemonConfig,
    *,
    socket_dir: str | None = None,
    concurrency: int | None = None,
    queue_size: int | None = None,
    metrics_address: str | None = None,
    health_address: str | None = None,
    metrics_auth: str | None = None,
    drain_seconds: float = DEFAULT_DRAIN_SECONDS,
    node_name: str = "",
    cache_sync_seconds: float = DEFAULT_CACHE_SYNC_SECONDS,
    watch_seconds: int = DEFAULT_WATCH_SECONDS,
    admission_check_seconds: float = DEFAULT_ADMISSION_CHECK_SECONDS,
    host_root: str = "",
    cni_conf_dir: str = "",
    max_connections: int = 0,
    frame_seconds: float = DEFAULT_FRAME_SECONDS,
) -> DaemonSettings:
    """The configuration's values (its daemon part, ``BraidConfig.daemon``), each overridden
    by its command-line flag when given. ``config``'s paths are those this process opens
    (named through the host root)."""
    chosen = concurrency if concurrency is not None else config.concurrency
    queue = queue_size if queue_size is not None else config.queue_size
    if chosen < 0 or queue < 0:
        raise CniError(INVALID_CONFIG, "daemon concurrency and queue size may not be negative")
    if admission_check_seconds < 0:
        raise CniError(INVALID_CONFIG, "--admission-check-seconds must be >= 0 (0: never)")
    if cache_sync_seconds < 0 or watch_seconds < 1:
        raise CniError(INVALID_CONFIG, "--cache-sync-seconds must be >= 0 and --watch-seconds >= 1")
    if max_connections < 0 or not 0 < frame_seconds <= MAX_FRAME_SECONDS:
        raise CniError(
            INVALID_CONFIG,
            f"--max-connections must be >= 0 and --frame-seconds in (0, {MAX_FRAME_SECONDS:g}]",
        )
    settings = DaemonSettings(
        socket_dir=Path(socket_dir or config.socket_dir),
        concurrency=chosen or default_concurrency(),
        queue_size=queue,
        metrics_address=(
            metrics_address if metrics_address is not None else config.metrics_address
        ),
        health_address=health_address if health_address is not None else config.health_address,
        metrics_auth=metrics_auth or config.metrics_auth,
        drain_seconds=drain_seconds,
        node_name=node_name,
        cache_sync_seconds=cache_sync_seconds,
        watch_seconds=watch_seconds,
        admission_check_seconds=admission_check_seconds,
        host_root=host_root,
        cni_conf_dir=cni_conf_dir,
        max_connections=max_connections,
        frame_seconds=frame_seconds,
    )
    # Refuses a malformed address, or one port for both, before anything starts.
    metrics = settings.metrics_endpoint()
    if metrics is not None and metrics[1] and metrics == settings.health_endpoint():
        raise CniError(
            INVALID_CONFIG,
            f"daemonHealthAddress {settings.health_address!r} is the metrics endpoint's: give "
            "the probes a port of their own",
        )
    return settings
