"""``braidctl attach|detach|check|explain|status``: the engine driven by a pod manifest.

The pod's annotations reach the engine the way containerd sends them (the
``io.kubernetes.cri.pod-annotations`` capability argument), so these commands need no store of
pods; NADs come from braid's configured store (``nadDir``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import msgspec

from braid._native import cni as native_cni
from braid.cni import Runtime
from braid.cni.request import build_cni_args
from braid.cni.search import operator_cni_path, search_dirs
from braid.commands.args import add_output_option, existing_file, pretty_json, write_data
from braid.commands.explain_text import summary, summary_line
from braid.config.schema import load_braid_config
from braid.engine.entry import Engine
from braid.engine.record import CorruptRecord, RecordStore
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.select import open_call_session
from braid.nad.manifests import PodManifest, manifest_objects, object_kind, pod_from_object
from braid.nad.plan import PodRef
from braid.nad.resolve import resolve_plan
from braid.nad.store import POD_ANNOTATIONS_CAPABILITY, FileStore

DEFAULT_CONFIG = "/etc/cni/braid/braid.conf"
DEFAULT_IFNAME = "eth0"
USAGE_ERROR = 2  # argparse's exit status for a bad command line


def read_pod(path: str) -> PodManifest:
    """The single pod of a manifest file."""
    pods = [
        pod_from_object(obj, where)
        for where, obj in manifest_objects(Path(path))
        if object_kind(obj, where) == "Pod"
    ]
    if len(pods) != 1:
        raise CniError(INVALID_CONFIG, f"{path}: expected exactly one Pod, found {len(pods)}")
    return pods[0]


def container_id_for(pod: PodManifest, given: str | None) -> str:
    """The given id, or a stable one derived from the pod's namespace and name."""
    if given:
        return given
    digest = hashlib.sha256(f"{pod.namespace}/{pod.name}".encode()).hexdigest()[:20]
    return f"braidctl-{digest}"


def stdin_for(config_path: str, pod: PodManifest) -> bytes:
    """braid's configuration with the pod's annotations as the runtime would send them."""
    try:
        doc = msgspec.json.decode(Path(config_path).read_bytes())
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"{config_path}: cannot be read: {exc.strerror}") from exc
    except msgspec.DecodeError as exc:
        raise CniError(INVALID_CONFIG, f"{config_path}: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CniError(INVALID_CONFIG, f"{config_path}: not a JSON object")
    runtime_config = dict(doc.get("runtimeConfig") or {})
    runtime_config[POD_ANNOTATIONS_CAPABILITY] = dict(pod.annotations) or None
    doc["runtimeConfig"] = runtime_config
    return msgspec.json.encode(doc)


def cni_env(
    command: str, pod: PodManifest, *, container_id: str, netns: str, ifname: str = DEFAULT_IFNAME
) -> dict[str, str]:
    env = dict(os.environ)
    pairs = [
        ("IgnoreUnknown", "1"),
        ("K8S_POD_NAMESPACE", pod.namespace),
        ("K8S_POD_NAME", pod.name),
    ]
    if pod.uid:
        pairs.append(("K8S_POD_UID", pod.uid))
    env.update(
        CNI_COMMAND=command,
        CNI_CONTAINERID=container_id,
        CNI_NETNS=netns,
        CNI_IFNAME=ifname,
        CNI_ARGS=build_cni_args(pairs),
        CNI_PATH=operator_cni_path(os.environ),
    )
    return env


def explain(
    *, config: str, pod_path: str, plugin_dirs: list[str]
) -> tuple[str, list[dict[str, Any]]]:
    """The attachment plan with each delegate's ADD stdin exactly as it will be sent, and the
    human summary of it (``braid.commands.explain_text``) that text output prints first."""
    pod = read_pod(pod_path)
    loaded = load_braid_config(stdin_for(config, pod))
    cfg = loaded.config
    plan = resolve_plan(
        cfg,
        FileStore(cfg.engine.dirs.nad_dir, cfg.engine.dirs.pod_dir),
        PodRef(namespace=pod.namespace, name=pod.name, uid=pod.uid),
        annotations=pod.annotations,
        capability_args=dict(cfg.runtime_config),
    )
    env_path = operator_cni_path(os.environ)
    runtime = Runtime(search_dirs(cfg.engine.dirs.bin_dir, [*plugin_dirs, env_path]))
    steps: list[dict[str, Any]] = []
    lines: list[str] = []
    for attachment in plan.attachments:
        net = attachment.network_list()
        version = runtime.version(net).run_version
        caps = (
            msgspec.json.encode(attachment.capability_args) if attachment.capability_args else None
        )
        args = msgspec.json.encode(attachment.args_cni) if attachment.args_cni else None
        stdins = [
            msgspec.json.decode(
                native_cni.plugin_stdin(
                    network_list=net.raw,
                    index=i,
                    command="ADD",
                    cni_version=version,
                    capability_args=caps,
                    args_cni=args,
                )
            )
            for i in range(len(net.plugin_types))
        ]
        lines.append(summary_line(attachment, stdins))
        steps.append(
            {
                "name": attachment.status_name,
                "interface": attachment.ifname,
                "runVersion": version,
                "delegates": stdins,
            }
        )
    return summary(f"{pod.namespace}/{pod.name}", lines), steps


def status_of(cni_dir: str, container_id: str) -> bytes | None:
    """The network-status list recorded for a container, None when braid holds no record."""
    try:
        record = RecordStore(cni_dir).read(container_id)
    except CorruptRecord:
        return None
    if record is None or not bytes(record.network_status):
        return None
    return bytes(record.network_status)


def _print_json(data: bytes) -> None:
    sys.stdout.write(pretty_json(msgspec.json.decode(data)))


DEFAULT_CNI_DIR = "/var/lib/cni/braid"


def _done_message(args: argparse.Namespace, container_id: str, cni_dir: str) -> str:
    """What a successful verb tells the user: the container id and netns the other verbs
    need, as command lines to paste."""
    if args.verb == "CHECK":
        return f"check: every attachment of container {container_id} is as recorded\n"
    if args.verb == "DEL":
        return f"detached: container {container_id} from {args.netns}\n"
    named = ["--pod", args.pod, "--netns", args.netns, "--config", args.config]
    if args.ifname != DEFAULT_IFNAME:
        named += ["--ifname", args.ifname]
    same = shlex.join([*named, "--container-id", container_id])
    where = [] if cni_dir == DEFAULT_CNI_DIR else ["--cni-dir", cni_dir]
    return (
        f"attached: container id {container_id}, netns {args.netns}\n"
        f"  braidctl status {shlex.join([*where, container_id])}\n"
        f"  braidctl check {same}\n"
        f"  braidctl detach {same}\n"
    )


def _pod_verb(args: argparse.Namespace) -> int:
    if not _with_config(args):
        return USAGE_ERROR
    container_id = args.container_id or ""
    cni_dir = DEFAULT_CNI_DIR
    try:
        pod = read_pod(args.pod)
        container_id = container_id_for(pod, args.container_id)
        stdin = stdin_for(args.config, pod)
        with contextlib.suppress(CniError):  # the engine reports a bad configuration
            cni_dir = load_braid_config(stdin).config.engine.dirs.cni_dir
        env = cni_env(
            args.verb, pod, container_id=container_id, netns=args.netns, ifname=args.ifname
        )
        out, code = Engine(session=open_call_session).run(env, stdin)
    except CniError as exc:
        out, code = exc.to_json(), 1
    if out:
        _print_json(out)
    if code == 0:
        # ADD's stdout is its result; the summary goes beside it, not into it.
        stream = sys.stderr if out else sys.stdout
        stream.write(_done_message(args, container_id, cni_dir))
    return code


def _explain(args: argparse.Namespace) -> int:
    if not _with_config(args):
        return USAGE_ERROR
    try:
        text, steps = explain(config=args.config, pod_path=args.pod, plugin_dirs=args.cni_path)
    except CniError as exc:
        _print_json(exc.to_json())
        return 1
    write_data(steps, args.output, lambda data: text + pretty_json(data))
    return 0


def _status(args: argparse.Namespace) -> int:
    found = status_of(args.cni_dir, args.container_id)
    if found is None:
        sys.stderr.write(f"braid holds no attachment record for container {args.container_id}\n")
        return 1
    write_data(msgspec.json.decode(found), args.output, pretty_json)
    return 0


def _config_option(parser: argparse.ArgumentParser) -> None:
    # No default here: argparse would check it before the required options, and a machine
    # without braid's file would hear about --config before a missing --pod.
    parser.add_argument(
        "--config",
        type=existing_file("--config"),
        help=f"braid's CNI configuration (default {DEFAULT_CONFIG})",
    )


def _with_config(args: argparse.Namespace) -> bool:
    """Sets ``args.config`` to the default when none was given; False, with the usage error
    written, when the default does not exist."""
    if args.config is None:
        try:
            args.config = existing_file("--config")(DEFAULT_CONFIG)
        except argparse.ArgumentTypeError as exc:
            sys.stderr.write(f"braidctl {args.command}: error: argument --config: {exc}\n")
            return False
    return True


def _pod_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--pod", required=required, type=existing_file("--pod"), help="pod manifest (YAML or JSON)"
    )


def add_parsers(subparsers: Any) -> None:
    """``attach``, ``detach``, ``check``, ``explain`` and ``status``."""
    for name, verb, text in (
        ("attach", "ADD", "attach a pod's networks in a namespace (engine ADD)"),
        ("detach", "DEL", "detach a pod's networks (engine DEL)"),
        ("check", "CHECK", "check every attachment of a pod (engine CHECK)"),
    ):
        parser = subparsers.add_parser(name, help=text)
        # attach and detach also take a running pod by name (``--running``), without these.
        file_only = verb == "CHECK"
        _pod_option(parser, required=file_only)
        parser.add_argument("--netns", required=file_only, help="the pod's network namespace path")
        parser.add_argument("--container-id", help="default: derived from the pod's name")
        parser.add_argument(
            "--ifname", default=DEFAULT_IFNAME, help="the default network's interface (CNI_IFNAME)"
        )
        _config_option(parser)
        parser.set_defaults(handler=_pod_verb, verb=verb)
        if not file_only:
            from braid.commands.hotplug import add_running_options  # noqa: PLC0415

            add_running_options(parser, _pod_verb)
    parser = subparsers.add_parser("explain", help="print a pod's attachment plan")
    _pod_option(parser)
    _config_option(parser)
    parser.add_argument(
        "--cni-path", action="append", default=[], help="extra plugin directory (repeatable)"
    )
    add_output_option(parser)
    parser.set_defaults(handler=_explain)
    parser = subparsers.add_parser("status", help="print a container's network-status")
    parser.add_argument("container_id", metavar="CONTAINER_ID")
    parser.add_argument("--cni-dir", default=DEFAULT_CNI_DIR, help="braid's cniDir")
    add_output_option(parser)
    parser.set_defaults(handler=_status)
