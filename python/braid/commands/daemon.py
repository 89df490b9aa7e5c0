"""``braidctl daemon``: the per-node daemon the compiled ``braid`` shim talks to."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from braid.cni.hostroot import HostRoot
from braid.config.schema import METRICS_AUTH_MODES
from braid.daemon.cniconfig import ConfListFollower, shim_settings
from braid.daemon.conflist import ConfListWriter
from braid.daemon.descriptors import raise_descriptor_limit
from braid.daemon.logs import DAEMON_LOGGER, install_json_logging
from braid.daemon.metrics_auth import metrics_gate_of
from braid.daemon.operator_config import OperatorConfig
from braid.daemon.server import DaemonAlreadyRunning, DaemonServer
from braid.daemon.service import DaemonService
from braid.daemon.settings import (
    DEFAULT_ADMISSION_CHECK_SECONDS,
    DEFAULT_CACHE_SYNC_SECONDS,
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_FRAME_SECONDS,
    DEFAULT_WATCH_SECONDS,
    DaemonSettings,
    node_name_of,
    settings_from,
)
from braid.daemon.trace import Tracer
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.select import kubernetes_wanted
from braid.version import package_version

if TYPE_CHECKING:
    from braid.k8s.client import KubeClient

log = logging.getLogger(DAEMON_LOGGER)
EXIT_JOIN_SECONDS = 5.0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``braidctl daemon``."""
    parser = subparsers.add_parser(
        "daemon",
        help="run the per-node daemon the braid shim forwards CNI calls to",
        description=__doc__,
    )
    parser.add_argument(
        "--config",
        default=os.environ.get("BRAID_CONFIG", ""),
        help="braid's configuration file (conf or conflist; $BRAID_CONFIG): the policy of "
        "every call, re-read when it changes",
    )
    parser.add_argument(
        "--host-root",
        default=os.environ.get("BRAID_HOST_ROOT", ""),
        help="where the node's root filesystem is mounted when the daemon runs in a container "
        "($BRAID_HOST_ROOT); every path braid handles is then the node's, and delegates run "
        "chrooted into it",
    )
    parser.add_argument(
        "--cni-conf-dir",
        default=os.environ.get("BRAID_CNI_CONF_DIR", ""),
        help="the node's CNI configuration directory ($BRAID_CNI_CONF_DIR): once ready, the "
        "daemon writes 00-braid.conflist there around the node's default network and keeps "
        "it in line; also braid's confDir where the configuration leaves it out",
    )
    parser.add_argument(
        "--shim-dir",
        default=os.environ.get("BRAID_SHIM_DIR", ""),
        help="with --cni-conf-dir: the node's directory of the braid shim ($BRAID_SHIM_DIR), "
        "where the daemon keeps the node file braid-node.json in line with its configuration; "
        "also braid's binDir where the configuration leaves it out",
    )
    parser.add_argument(
        "--socket-dir", help="directory of braid.sock (daemonSocketDir; a node path)"
    )
    parser.add_argument(
        "--concurrency", type=int, help="requests executing at once (default 2x cores)"
    )
    parser.add_argument("--queue-size", type=int, help="requests waiting at most (default 512)")
    parser.add_argument(
        "--max-connections",
        type=int,
        default=0,
        help="connections on the socket at once (default: concurrency + queue + 32, within "
        "the descriptor limit); one more is answered with code 11",
    )
    parser.add_argument(
        "--frame-seconds",
        type=float,
        default=DEFAULT_FRAME_SECONDS,
        help="how long a client has to send its request frame (default 3)",
    )
    parser.add_argument(
        "--metrics-address",
        help="HOST:PORT of /metrics, /healthz, /readyz (daemonMetricsAddress; '' disables)",
    )
    parser.add_argument(
        "--health-address",
        help="HOST:PORT of /healthz and /readyz alone, for kubelet's probes "
        "(daemonHealthAddress, default 127.0.0.1:9191; '' disables)",
    )
    parser.add_argument(
        "--metrics-auth",
        choices=METRICS_AUTH_MODES,
        help="who may read the metrics endpoint: anyone (none), or a bearer token the API "
        "server reviews (kubernetes) (daemonMetricsAuth, default none)",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=DEFAULT_DRAIN_SECONDS,
        help="how long shutdown waits for requests in flight",
    )
    parser.add_argument(
        "--node-name",
        help="this node's name, whose pods the daemon watches (default: $BRAID_NODE_NAME, "
        "$NODE_NAME, the host name)",
    )
    parser.add_argument(
        "--cache-sync-seconds",
        type=float,
        default=DEFAULT_CACHE_SYNC_SECONDS,
        help="how long readiness waits for the Kubernetes caches to list",
    )
    parser.add_argument(
        "--watch-seconds",
        type=int,
        default=DEFAULT_WATCH_SECONDS,
        help="how long the API server keeps one watch open before the daemon renews it",
    )
    parser.add_argument(
        "--admission-check-seconds",
        type=float,
        default=DEFAULT_ADMISSION_CHECK_SECONDS,
        help="how often the daemon checks that its admission policy is in force, give or take "
        "a tenth (0: never)",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        type=Path,
        help="append each CNI request's per-phase timings to FILE, one JSON line each "
        "(docs/performance.md; off by default)",
    )
    parser.set_defaults(handler=run_daemon)


def settings_of(args: argparse.Namespace, operator: OperatorConfig) -> DaemonSettings:
    node_name, source = node_name_of(args.node_name, os.environ)
    log.debug("node name %s from %s", node_name, source)
    socket_dir = operator.localize.local(args.socket_dir) if args.socket_dir else None
    return settings_from(
        operator.config.daemon,
        socket_dir=socket_dir,
        concurrency=args.concurrency,
        queue_size=args.queue_size,
        metrics_address=args.metrics_address,
        health_address=args.health_address,
        metrics_auth=args.metrics_auth,
        drain_seconds=args.drain_seconds,
        node_name=node_name,
        cache_sync_seconds=args.cache_sync_seconds,
        watch_seconds=args.watch_seconds,
        admission_check_seconds=args.admission_check_seconds,
        host_root=args.host_root,
        cni_conf_dir=args.cni_conf_dir,
        max_connections=args.max_connections,
        frame_seconds=args.frame_seconds,
    )


def host_root_of(path: str) -> HostRoot | None:
    """The node's root filesystem at ``path`` ("" : this process's own root)."""
    if not path:
        return None
    try:
        return HostRoot(path)
    except (OSError, ValueError) as exc:
        message = f"--host-root {path!r} is not a directory"
        raise CniError(INVALID_CONFIG, message, str(exc)) from exc


def follower_of(
    args: argparse.Namespace, operator: OperatorConfig, root: HostRoot | None
) -> ConfListFollower | None:
    """What keeps braid's conflist in ``--cni-conf-dir`` (None without that flag)."""
    if not args.cni_conf_dir:
        return None
    socket_dir = args.socket_dir or operator.loaded.config.daemon.socket_dir
    writer = ConfListWriter(
        args.cni_conf_dir,
        root=root,
        readiness_file=operator.loaded.config.engine.dirs.readiness_indicator_file,
        settings=lambda: shim_settings(operator, socket_dir),
        shim_dir=args.shim_dir,
    )
    return ConfListFollower(writer)


def service_of(
    operator: OperatorConfig, settings: DaemonSettings, root: HostRoot | None
) -> DaemonService:
    """The service, with the Kubernetes side when braid's configuration or environment asks
    for it (imported only then). Raises ``CniError`` for unusable credentials."""
    config = operator.config
    service = DaemonService(
        concurrency=settings.concurrency,
        queue_size=settings.queue_size,
        operator=operator,
        root=root,
    )
    if kubernetes_wanted(config.kubernetes, os.environ):
        from braid.daemon.cluster import open_cluster  # noqa: PLC0415 - imports the HTTP client

        service.cluster = open_cluster(
            config,
            os.environ,
            node_name=settings.node_name,
            metrics=service.metrics,
            watch_seconds=settings.watch_seconds,
            admission_check_seconds=settings.admission_check_seconds,
        )
    return service


def thin_chores(
    operator: OperatorConfig, node_name: str, client: KubeClient | None
) -> list[Callable[[], object]]:
    """What keeps braid-thin's kubeconfig (``thinKubeconfig``; nothing without it)."""
    path = operator.config.daemon.thin_kubeconfig
    if not path:
        return []
    from braid.k8s.thin_token import keeper_of  # noqa: PLC0415

    config = operator.config.daemon
    return [keeper_of(config, operator.localize.local(path), node_name, client).look]


def threads_left(timeout: float) -> list[str]:
    """The names of the threads besides this one still alive after waiting ``timeout``."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t is not threading.current_thread()]


def tracer_of(path: Path | None) -> Tracer | None:
    """``--trace``'s file, opened for appending (None without the flag)."""
    if path is None:
        return None
    try:
        return Tracer(path)
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"--trace {path}: cannot open it", str(exc)) from exc


def run_daemon(args: argparse.Namespace) -> int:
    install_json_logging()
    log.info("braid %s starting", package_version())
    raise_descriptor_limit()
    try:
        root = host_root_of(args.host_root)
        node_dirs = {"confDir": args.cni_conf_dir, "binDir": args.shim_dir}
        operator = OperatorConfig(args.config or None, root, node_dirs=node_dirs)
        settings = settings_of(args, operator)
        service = service_of(operator, settings, root)
        service.follower = follower_of(args, operator, root)
        service.tracer = tracer_of(args.trace)
        client = service.cluster.client if service.cluster else None
        gate = metrics_gate_of(settings.metrics_auth, client, service.metrics.observe_metrics_auth)
        service.more_chores += thin_chores(operator, settings.node_name, client)
    except CniError as exc:
        log.error("cannot start: %s", exc)  # noqa: TRY400 - the message says it all
        return 2
    try:
        DaemonServer(settings, service, metrics_gate=gate).serve()
    except (DaemonAlreadyRunning, OSError) as exc:
        log.error("cannot serve: %s", exc)  # noqa: TRY400
        return 1
    finally:
        service.close()
    left = threads_left(EXIT_JOIN_SECONDS)
    if left:
        log.error("threads still running at exit: %s", ", ".join(left))
    else:
        log.info("exited cleanly: no thread left")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="braid-daemon")
    add_parser(parser.add_subparsers(dest="command", required=True))
    namespace = parser.parse_args(["daemon", *sys.argv[1:]])
    sys.exit(namespace.handler(namespace))
