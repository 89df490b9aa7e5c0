"""``braidctl attach``/``detach --running NAMESPACE/NAME``: a network hot-plugged into or out of
a running pod (``docs/hotplug.md``).

The pod's selection annotation is edited with the operator's own credentials, read as kubectl
reads them (``--kubeconfig``, else the ``$KUBECONFIG`` list merged, else ``~/.kube/config``;
``--context``, else the current context; ``braid.k8s.kubeconfig_merge``), by a merge PATCH
with the pod's ``resourceVersion`` (so a concurrent edit is never lost), then the node's daemon
is asked to bring the pod to it at once (``hotplug`` request over its socket) and answers
with what it attached and detached. The annotation stays the truth: the daemon would apply
the same change from its watch, and a later edit of the annotation is diffed against it.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from braid.daemon.client import exchange
from braid.daemon.protocol import PROTOCOL_VERSION
from braid.errors import INTERNAL, INVALID_CONFIG, INVALID_ENVIRONMENT, CniError
from braid.nad.annotations import NETWORKS_ANNOTATION

DEFAULT_SOCKET_DIR = "/run/braid"
MAX_ATTEMPTS = 5
USAGE_ERROR = 2
_Ref = tuple[str, str, str | None]


def _ref(text: str, namespace: str) -> _Ref:
    """``[namespace/]name[@interface]`` as (namespace, name, interface)."""
    body, _, interface = text.strip().partition("@")
    ns, _, name = body.rpartition("/")
    if not name:
        raise CniError(INVALID_CONFIG, f"network {text!r}: expected [namespace/]name[@interface]")
    return ns or namespace, name, interface or None


def _matches(ref: _Ref, found: _Ref) -> bool:
    return ref[:2] == found[:2] and ref[2] in (None, found[2])


def _entry_ref(entry: Any, namespace: str) -> _Ref | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        return None
    ns = entry.get("namespace")
    interface = entry.get("interface")
    return (
        ns if isinstance(ns, str) and ns else namespace,
        entry["name"],
        interface if isinstance(interface, str) else None,
    )


def edit(value: str, namespace: str, network: str, *, attach: bool) -> str:
    """The selection annotation ``value`` of a pod of ``namespace`` with ``network`` appended
    (``attach``) or every entry it names removed, in the annotation's own form (a JSON list, or
    the comma-separated text form)."""
    ref = _ref(network, namespace)
    if value.strip().startswith("["):
        try:
            entries = json.loads(value)
        except json.JSONDecodeError as exc:
            raise CniError(INVALID_CONFIG, f"{NETWORKS_ANNOTATION} is not JSON", str(exc)) from None
        if not isinstance(entries, list):
            raise CniError(INVALID_CONFIG, f"{NETWORKS_ANNOTATION} is not a JSON list")
        if attach:
            new: dict[str, str] = {"name": ref[1], "namespace": ref[0]}
            if ref[2] is not None:
                new["interface"] = ref[2]
            return json.dumps([*entries, new])
        kept = [e for e in entries if not _named(ref, _entry_ref(e, namespace))]
        _removed_some(len(entries) - len(kept), network)
        return json.dumps(kept)
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if attach:
        return ", ".join([*tokens, network.strip()])
    kept_tokens = [t for t in tokens if not _matches(ref, _ref(t, namespace))]
    _removed_some(len(tokens) - len(kept_tokens), network)
    return ", ".join(kept_tokens)


def _named(ref: _Ref, found: _Ref | None) -> bool:
    return found is not None and _matches(ref, found)


def _removed_some(count: int, network: str) -> None:
    if count == 0:
        raise CniError(INVALID_CONFIG, f"the pod does not select {network!r}; nothing to detach")


def patch_annotation(client: Any, namespace: str, name: str, network: str, *, attach: bool) -> str:
    """Edits the pod's selection annotation (``edit``), retrying when it changed meanwhile
    (409); returns the new value."""
    from braid.k8s.client import MERGE_PATCH  # noqa: PLC0415 - the HTTP client, only here
    from braid.k8s.errors import ApiError  # noqa: PLC0415
    from braid.k8s.objects import pod_path  # noqa: PLC0415

    path = pod_path(namespace, name)
    attempt = 0
    while True:
        attempt += 1
        pod = client.json("GET", path, what=f"GET pod {namespace}/{name}")
        meta = pod.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        value = edit(annotations.get(NETWORKS_ANNOTATION, ""), namespace, network, attach=attach)
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion", ""),
                             "annotations": {NETWORKS_ANNOTATION: value}}}  # fmt: skip
        try:
            client.request(
                "PATCH",
                path,
                body=msgspec.json.encode(body),
                content_type=MERGE_PATCH,
                what=f"PATCH pod {namespace}/{name}",
            ).release_conn()
        except ApiError as exc:
            if exc.status == 409 and attempt < MAX_ATTEMPTS:
                continue
            raise
        return value


def ask_daemon(socket_dir: str, namespace: str, name: str, timeout: float = 120.0) -> bytes:
    """The daemon's answer to a ``hotplug`` request: the outcome's JSON; ``CniError`` when it
    refused or failed."""
    request = {"protocol": PROTOCOL_VERSION, "kind": "hotplug",
               "env": {"K8S_POD_NAMESPACE": namespace, "K8S_POD_NAME": name}}  # fmt: skip
    socket_path = Path(socket_dir) / "braid.sock"
    try:
        answer = exchange(socket_path, request, timeout)
    except (OSError, ConnectionError) as exc:
        raise CniError(
            INVALID_ENVIRONMENT, f"cannot reach the braid daemon at {socket_path}", str(exc)
        ) from exc
    try:
        answered = msgspec.convert(answer, type=_Answer)
        stdout = base64.b64decode(answered.stdout, validate=True)
        out = msgspec.json.decode(stdout)
    except (msgspec.ValidationError, msgspec.DecodeError, binascii.Error) as exc:
        raise CniError(INTERNAL, "the braid daemon's answer is not understood", str(exc)) from exc
    if answered.exitCode != 0:
        error = out if isinstance(out, dict) else {}
        raise CniError(
            int(error.get("code", INTERNAL)), str(error.get("msg")), str(error.get("details", ""))
        )
    return stdout


class _Answer(msgspec.Struct):
    exitCode: int
    stdout: str


def operator_client(args: argparse.Namespace) -> Any:
    """A client with the operator's credentials, as kubectl would read them."""
    from braid.k8s.client import KubeClient  # noqa: PLC0415 - the HTTP client, only here
    from braid.k8s.credentials import CredentialReloader  # noqa: PLC0415
    from braid.k8s.kubeconfig import kubeconfig_credentials  # noqa: PLC0415
    from braid.k8s.kubeconfig_merge import operator_files  # noqa: PLC0415

    files = operator_files(args.kubeconfig, os.environ)
    context = args.context or ""
    return KubeClient(
        CredentialReloader(lambda: kubeconfig_credentials(files, context=context)), timeout=10.0
    )


def running_verb(args: argparse.Namespace) -> int:
    """``attach``/``detach`` with ``--running NAMESPACE/NAME NETWORK``."""
    namespace, _, name = args.running.rpartition("/")
    if not name or not args.network:
        sys.stderr.write(
            f"braidctl {args.command}: error: --running takes NAMESPACE/NAME, and a NETWORK "
            "([namespace/]name[@interface]) follows it\n"
        )
        return USAGE_ERROR
    try:
        client = operator_client(args)
        try:
            attach = args.verb == "ADD"
            patch_annotation(client, namespace or "default", name, args.network, attach=attach)
        finally:
            client.close()
        out = ask_daemon(args.socket_dir, namespace or "default", name)
    except CniError as exc:
        sys.stdout.write(exc.to_json().decode() + "\n")
        return 1
    sys.stdout.write(json.dumps(json.loads(out), indent=2) + "\n")
    return 0


def add_running_options(
    parser: argparse.ArgumentParser, file_verb: Callable[[argparse.Namespace], int]
) -> None:
    """``--running NAMESPACE/NAME NETWORK`` on ``attach`` or ``detach``, whose ``--pod`` and
    ``--netns`` (the pod-file form, run by ``file_verb``) are then required only without it."""
    parser.add_argument(
        "--running",
        metavar="NAMESPACE/NAME",
        help="a running pod, by name: hot-plug NETWORK through the node's daemon",
    )
    parser.add_argument(
        "network", nargs="?", metavar="NETWORK", help="with --running: [namespace/]name[@if]"
    )
    parser.add_argument(
        "--kubeconfig", help="with --running: the operator's kubeconfig (default: $KUBECONFIG)"
    )
    parser.add_argument(
        "--context", help="with --running: the kubeconfig's context (default: its current one)"
    )
    parser.add_argument(
        "--socket-dir", default=DEFAULT_SOCKET_DIR, help="with --running: the daemon's socket dir"
    )

    def handler(args: argparse.Namespace) -> int:
        if args.running is not None:
            if args.pod is not None or args.netns is not None:
                parser.error("--running takes neither --pod nor --netns")
            return running_verb(args)
        if args.network is not None:
            parser.error(f"unrecognized arguments: {args.network} (NETWORK needs --running)")
        missing = [o for o, v in (("--pod", args.pod), ("--netns", args.netns)) if v is None]
        if missing:
            parser.error(f"the following arguments are required: {', '.join(missing)}")
        return file_verb(args)

    parser.set_defaults(handler=handler)
