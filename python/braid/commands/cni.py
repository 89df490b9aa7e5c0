"""``braidctl cni VERB NETWORK NETNS``: cnitool's behaviour on top of ``braid.cni``.

Environment as cnitool reads it: ``NETCONFPATH`` (default ``/etc/cni/net.d``),
``CNI_PATH``, ``CNI_ARGS``, ``CAP_ARGS`` (a JSON object), ``CNI_IFNAME``; plus braid's
``CNI_CACHE_DIR`` and ``BRAID_PLUGIN_TIMEOUT``. The result goes to stdout; an
error goes to stdout as the CNI error JSON with exit status 1, never as a traceback.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import msgspec

from braid.cni.config import load_network_list
from braid.cni.request import RuntimeRequest, parse_cni_args
from braid.cni.runtime import DEFAULT_CACHE_DIR, Runtime
from braid.errors import INTERNAL, INVALID_ENVIRONMENT, CniError

VERBS = ("add", "del", "check", "gc", "status", "version")
NEEDS_NETNS = frozenset({"add", "del", "check"})
DEFAULT_NETCONFPATH = "/etc/cni/net.d"
DEFAULT_IFNAME = "eth0"

log = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> None:
    """Registers the ``cni`` subcommand on ``braidctl``'s subparsers."""
    parser = subparsers.add_parser(
        "cni",
        help="run a CNI network from NETCONFPATH against a network namespace (like cnitool)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("verb", choices=VERBS)
    parser.add_argument("network", help="the network name (the `name` of a conflist)")
    parser.add_argument("netns", nargs="?", default="", help="network namespace path")
    parser.add_argument("-i", "--ifname", help="interface name (default $CNI_IFNAME or eth0)")
    parser.add_argument("--timeout", type=float, help="plugin deadline in seconds")
    parser.add_argument("--cache-dir", help="result cache root (default $CNI_CACHE_DIR)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Runs one verb; prints the result or the CNI error JSON. Returns the exit status."""
    try:
        output = execute(args, os.environ)
    except CniError as exc:
        sys.stdout.buffer.write(exc.to_json())
        sys.stdout.flush()
        return 1
    except Exception as exc:  # no traceback reaches the user: the error JSON does
        log.debug("internal error", exc_info=True)
        err = CniError(INTERNAL, f"internal error: {exc}")
        sys.stdout.buffer.write(err.to_json())
        sys.stdout.flush()
        return 1
    if output:
        sys.stdout.buffer.write(msgspec.json.format(output, indent=4) + b"\n")
        sys.stdout.flush()
    return 0


def execute(args: argparse.Namespace, env: Mapping[str, str]) -> bytes:
    """The verb's output (empty for verbs without one)."""
    verb: str = args.verb
    if verb in NEEDS_NETNS and not args.netns:
        raise CniError(INVALID_ENVIRONMENT, f"{verb} needs a network namespace path (NETNS)")
    if args.timeout is not None and args.timeout <= 0:
        raise CniError(INVALID_ENVIRONMENT, f"--timeout must be positive, not {args.timeout}")
    net = load_network_list(env.get("NETCONFPATH") or DEFAULT_NETCONFPATH, args.network)
    runtime = Runtime(
        [d for d in env.get("CNI_PATH", "").split(":") if d],
        cache_dir=args.cache_dir or env.get("CNI_CACHE_DIR") or DEFAULT_CACHE_DIR,
        timeout=args.timeout if args.timeout is not None else env_timeout(env),
    )
    if verb == "gc":
        runtime.gc(net)
        return b""
    if verb == "status":
        runtime.status(net)
        return b""
    if verb == "version":
        return runtime.version(net).to_json()
    req = request_from_env(args, env)
    if verb == "add":
        return runtime.add(net, req)
    if verb == "check":
        runtime.check(net, req)
    else:
        runtime.delete(net, req)
    return b""


def request_from_env(args: argparse.Namespace, env: Mapping[str, str]) -> RuntimeRequest:
    netns = os.path.abspath(args.netns)  # noqa: PTH100 - cnitool's filepath.Abs, no symlinks
    return RuntimeRequest(
        container_id=container_id_for(netns),
        netns=netns,
        ifname=args.ifname or env.get("CNI_IFNAME") or DEFAULT_IFNAME,
        cni_args=cni_args_from(env.get("CNI_ARGS", "")),
        capability_args=capability_args_from(env.get("CAP_ARGS", "")),
    )


def container_id_for(netns: str) -> str:
    """cnitool's container id: ``cnitool-`` + hex of the first 10 bytes of SHA-512(netns)."""
    return "cnitool-" + hashlib.sha512(netns.encode()).digest()[:10].hex()


def cni_args_from(value: str) -> list[tuple[str, str]]:
    """``CNI_ARGS`` pairs; like cnitool, an empty key or value is refused."""
    if not value:
        return []
    pairs = parse_cni_args(_utf8_text("CNI_ARGS", value))
    for key, val in pairs:
        if not key or not val:
            raise CniError(INVALID_ENVIRONMENT, f"invalid CNI_ARGS pair {key}={val!s}")
    return pairs


def _utf8_text(name: str, value: str) -> str:
    """``value`` when it is UTF-8 text: ``os.environ`` holds undecodable bytes as lone
    surrogates, which the parsers cannot take (code 4 rather than an internal error)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        raise CniError(INVALID_ENVIRONMENT, f"{name} is not valid UTF-8") from None
    return value


def capability_args_from(value: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        decoded = msgspec.json.decode(_utf8_text("CAP_ARGS", value))
    except (msgspec.DecodeError, RecursionError) as exc:
        raise CniError(INVALID_ENVIRONMENT, "CAP_ARGS is not valid JSON", str(exc)) from None
    if not isinstance(decoded, dict):
        raise CniError(INVALID_ENVIRONMENT, "CAP_ARGS must be a JSON object")
    return decoded


def env_timeout(env: Mapping[str, str]) -> float | None:
    raw = env.get("BRAID_PLUGIN_TIMEOUT", "")
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also NaN, which would be no deadline at all or none to wait for
        raise CniError(
            INVALID_ENVIRONMENT, f"BRAID_PLUGIN_TIMEOUT must be a positive number, not {raw!r}"
        )
    return value
