"""``braidctl daemon``: the per-node daemon the compiled ``braid`` shim talks to."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from braid.daemon.logs import DAEMON_LOGGER, install_json_logging
from braid.daemon.server import DaemonAlreadyRunning, DaemonServer
from braid.daemon.service import DaemonService
from braid.daemon.settings import (
    DEFAULT_DRAIN_SECONDS,
    DaemonSettings,
    load_config_file,
    settings_from,
)
from braid.errors import CniError

log = logging.getLogger(DAEMON_LOGGER)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``braidctl daemon``."""
    parser = subparsers.add_parser(
        "daemon",
        help="run the per-node daemon the braid shim forwards CNI calls to",
        description=__doc__,
    )
    parser.add_argument("--config", help="braid's configuration file (conf or conflist)")
    parser.add_argument("--socket-dir", help="directory of braid.sock (daemonSocketDir)")
    parser.add_argument(
        "--concurrency", type=int, help="requests executing at once (default 2x cores)"
    )
    parser.add_argument("--queue-size", type=int, help="requests waiting at most (default 512)")
    parser.add_argument(
        "--metrics-address",
        help="HOST:PORT of /metrics, /healthz, /readyz (daemonMetricsAddress; '' disables)",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=DEFAULT_DRAIN_SECONDS,
        help="how long shutdown waits for requests in flight",
    )
    parser.set_defaults(handler=run_daemon)


def settings_of(args: argparse.Namespace) -> DaemonSettings:
    return settings_from(
        load_config_file(args.config),
        socket_dir=args.socket_dir,
        concurrency=args.concurrency,
        queue_size=args.queue_size,
        metrics_address=args.metrics_address,
        drain_seconds=args.drain_seconds,
    )


def run_daemon(args: argparse.Namespace) -> int:
    install_json_logging()
    try:
        settings = settings_of(args)
    except CniError as exc:
        log.error("cannot start: %s", exc)  # noqa: TRY400 - the message says it all
        return 2
    service = DaemonService(concurrency=settings.concurrency, queue_size=settings.queue_size)
    try:
        asyncio.run(DaemonServer(settings, service).serve())
    except (DaemonAlreadyRunning, OSError) as exc:
        log.error("cannot serve: %s", exc)  # noqa: TRY400
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="braid-daemon")
    add_parser(parser.add_subparsers(dest="command", required=True))
    namespace = parser.parse_args(["daemon", *sys.argv[1:]])
    sys.exit(namespace.handler(namespace))
