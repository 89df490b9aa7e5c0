"""``braidctl nad-webhook``: the validating admission webhook that refuses, when the API server
is asked to create or update a NetworkAttachmentDefinition, what ``braidctl validate``
refuses, with ``validate``'s messages (docs/nad-webhook.md).

It serves HTTPS (``nad_webhook_server``) with a certificate of its own CA, kept in a Secret
and renewed before it expires by whichever replica gets there first, its CA bundle written
into its ValidatingWebhookConfiguration (``nad_webhook_keeper``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from braid.commands.args import seconds
from braid.commands.validate import _plugin_directories

DAY = 86400.0
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _namespace(args: argparse.Namespace) -> str:
    if args.namespace:
        return str(args.namespace)
    try:
        return Path(SERVICE_ACCOUNT_NAMESPACE).read_text().strip() or "braid-system"
    except OSError:
        return "braid-system"


def _hosts(args: argparse.Namespace, namespace: str) -> tuple[str, ...]:
    service = args.service
    names = [f"{service}.{namespace}.svc", f"{service}.{namespace}", service]
    return tuple(dict.fromkeys(names + list(args.host or [])))


def _listen(value: str) -> tuple[str, int]:
    """An argparse ``type``: ``ADDRESS:PORT`` (``[ADDRESS]:PORT`` for IPv6)."""
    address, _, port = value.rpartition(":")
    address = address.removeprefix("[").removesuffix("]")
    if not address or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not ADDRESS:PORT")
    return address, int(port)


def _client(args: argparse.Namespace) -> Any:
    from braid.k8s.client import KubeClient  # noqa: PLC0415 - the HTTP client, only here
    from braid.k8s.credentials import CredentialReloader  # noqa: PLC0415
    from braid.k8s.kubeconfig import (  # noqa: PLC0415
        Credentials,
        in_cluster_credentials,
        kubeconfig_credentials,
    )

    def load() -> Credentials:
        if args.kubeconfig:
            return kubeconfig_credentials(args.kubeconfig)
        return in_cluster_credentials(os.environ)

    return KubeClient(CredentialReloader(load), timeout=10.0, user_agent="braid-nad-webhook")


def _answerer(args: argparse.Namespace) -> Any:
    from braid.commands.nad_webhook_review import answer  # noqa: PLC0415
    from braid.commands.validate_plugins import PluginCheck, plugin_dirs  # noqa: PLC0415

    plugins = PluginCheck(plugin_dirs(args.check_plugins)) if args.check_plugins else None
    return lambda body: answer(body, plugins)


def run_webhook(args: argparse.Namespace) -> int:
    from braid.commands.nad_webhook_keeper import Keeper, Names  # noqa: PLC0415
    from braid.commands.nad_webhook_rotation import Policy  # noqa: PLC0415
    from braid.commands.nad_webhook_server import WebhookServer  # noqa: PLC0415

    if args.propagation < 2 * args.check_interval:
        sys.stderr.write(
            "braidctl nad-webhook: error: --propagation must be at least twice "
            "--check-interval (every replica reads the Secret in between)\n"
        )
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    namespace = _namespace(args)
    names = Names(namespace, args.secret, args.webhook_configuration)
    policy = Policy(
        args.ca_lifetime, args.serving_lifetime, args.propagation, _hosts(args, namespace)
    )
    keeper = Keeper(_client(args), names, policy)
    server = WebhookServer(
        args.listen,
        context=lambda: keeper.context,
        answer=_answerer(args),
        max_body=args.max_request_bytes,
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="nad-webhook", daemon=True)
    serving.start()
    logging.getLogger("braid.nad_webhook").info(
        "listening on %s port %d", args.listen[0], server.server_address[1]
    )
    try:
        keeper.run(args.check_interval, stop)
    finally:
        server.shutdown()
        server.server_close()
    return 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "nad-webhook", help="serve the admission webhook that checks NADs as validate does"
    )
    add = parser.add_argument
    add("--listen", type=_listen, default="0.0.0.0:8443", metavar="ADDRESS:PORT",
        help="where to serve HTTPS (default: 0.0.0.0:8443; [::]:8443 for IPv6)")  # fmt: skip
    add("--namespace", default="", help="namespace of the Secret (default: the pod's own)")
    add("--secret", default="braid-nad-webhook-certs", help="Secret holding the certificates")
    add("--webhook-configuration", default="braid-nad-webhook",
        help="ValidatingWebhookConfiguration whose caBundle is kept")  # fmt: skip
    add("--service", default="braid-nad-webhook", help="Service the API server calls")
    add("--host", action="append", metavar="NAME",
        help="another DNS name or IP address for the serving certificate (repeatable)")  # fmt: skip
    add("--kubeconfig", default="", help="kubeconfig (default: the in-cluster account)")
    add("--ca-lifetime", type=seconds(zero=False), default=365 * DAY, metavar="SECONDS")
    add("--serving-lifetime", type=seconds(zero=False), default=30 * DAY, metavar="SECONDS")
    add("--check-interval", type=seconds(zero=False), default=60.0, metavar="SECONDS",
        help="how often each replica reads the Secret (default: 60)")  # fmt: skip
    add("--propagation", type=seconds(zero=False), default=300.0, metavar="SECONDS",
        help="how long a new CA is trusted before it signs (default: 300)")  # fmt: skip
    add("--max-request-bytes", type=int, default=3 << 20, metavar="BYTES")
    add("--check-plugins", action="append", type=_plugin_directories, metavar="DIR",
        help="as validate --check-plugins: plugins must exist in DIR")  # fmt: skip
    parser.set_defaults(handler=run_webhook)
