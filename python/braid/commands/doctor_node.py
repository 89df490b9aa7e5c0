"""``braidctl doctor``'s checks of the node's files and of the daemon: the shim and its version,
braid's place in the CNI configuration directory, the daemon's socket, the readiness indicator."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from braid.commands.doctor_view import Finding, NodeView, failed, good, nothing
from braid.daemon.client import exchange, is_ready
from braid.daemon.conflist import (
    BRAID_CONFLIST,
    FULL_SHIM_NAME,
    SHIM_NAME,
    default_network_file,
)
from braid.daemon.conflist_watch import REWRITES_TO_WARN, WINDOW_SECONDS
from braid.daemon.primaries import (
    UNKNOWN_REMOVER,
    UNKNOWN_SHADOW,
    first_configuration,
    primary_advice,
    remover_of,
)
from braid.daemon.protocol import PROTOCOL_VERSION
from braid.daemon.settings import SOCKET_NAME
from braid.daemon.shim_version import BraidVersion, mismatch, own_version, shim_version

DAEMON_LOGS = "check the daemon: `kubectl -n braid-system logs ds/braid -c daemon`"


def reinstall(bin_dir: str) -> str:
    return (
        "run the DaemonSet's init container again (delete the braid pod on this node) "
        f"or `braidctl install --mode=none --cni-bin-dir={bin_dir}`"
    )


def check_shim(view: NodeView) -> Iterator[Finding]:
    bin_dir = view.config.engine.dirs.bin_dir
    for name in (SHIM_NAME, FULL_SHIM_NAME):
        path = Path(view.local(f"{bin_dir}/{name}"))
        if path.is_file() and os.access(path, os.X_OK):
            yield good(f"shim {name}", f"{bin_dir}/{name} is executable")
        else:
            yield failed(
                f"shim {name}", f"{bin_dir}/{name} is missing or not executable", reinstall(bin_dir)
            )


def check_shim_version(view: NodeView, answer: dict[str, Any] | None) -> Finding:
    """The shim's VERSION answer against the daemon's version (this braidctl's when the daemon
    does not say)."""
    shown = f"{view.config.engine.dirs.bin_dir}/{SHIM_NAME}"
    local = Path(view.local(shown))
    if not local.is_file():
        return nothing("shim version", f"no shim at {shown} (see the shim's check)")
    try:
        shim = shim_version(str(local))
    except ValueError as exc:
        return failed("shim version", str(exc), reinstall(view.config.engine.dirs.bin_dir))
    daemon, whose = own_version(), "this braidctl (the daemon did not say)"
    if answer is not None and isinstance(answer.get("braidVersion"), str):
        daemon, whose = BraidVersion(answer["braidVersion"], str(answer.get("braidBuild"))), ""
    why = mismatch(shim, daemon)
    if why:
        return failed(
            "shim version",
            f"{shown}: {why}",
            f"{reinstall(view.config.engine.dirs.bin_dir)}; or roll the DaemonSet so shim and "
            "daemon come from one image: `kubectl -n braid-system rollout restart ds/braid`",
        )
    against = f"the daemon's braid {daemon}" if not whose else f"{whose}: braid {daemon}"
    return good("shim version", f"{shown} is braid {shim}, as {against}")


def check_conflist(view: NodeView) -> Iterator[Finding]:
    check = "braid's CNI configuration"
    conf_dir = Path(view.local(view.conf_dir))
    first = first_configuration(conf_dir)
    if first is not None and first.name == BRAID_CONFLIST:
        yield good(check, f"{view.conf_dir}/{BRAID_CONFLIST} first")
        return
    used = first.name if first else "nothing"
    detail = f"the runtime uses {used} in {view.conf_dir}, not {BRAID_CONFLIST}"
    advice = primary_advice(first) if first is not None else ""
    if advice:
        yield failed(check, detail, advice)
    elif not (conf_dir / BRAID_CONFLIST).is_file():
        yield failed(
            check,
            f"{detail}: braid's file is not there",
            "braid's daemon writes it once it is ready and the node's default network exists "
            f"(--cni-conf-dir); {DAEMON_LOGS}",
        )
    else:
        yield failed(
            check,
            detail,
            f"{used} sorts before {BRAID_CONFLIST}: {UNKNOWN_SHADOW}",
        )


def _count(seen: dict[str, Any], key: str) -> int:
    value = seen.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def check_conflist_kept(view: NodeView, answer: dict[str, Any] | None) -> Finding:
    """Whether braid's file keeps disappearing, as the daemon that keeps it counts it (the
    ``cniConfig`` of its health answer), with the primary that removes it when it is known."""
    check = "braid's CNI configuration kept"
    seen = answer.get("cniConfig") if answer is not None else None
    if not isinstance(seen, dict):
        return nothing(check, "the daemon does not say (it keeps no conflist, or does not answer)")
    where = f"{view.conf_dir}/{BRAID_CONFLIST}"
    recent, total = _count(seen, "recentRewrites"), _count(seen, "rewrites")
    if recent < REWRITES_TO_WARN:
        return good(
            check,
            f"the daemon wrote {where} again after it disappeared {total} times since it "
            f"started, {recent} in the last {WINDOW_SECONDS:.0f} s",
        )
    conf_dir = Path(view.local(view.conf_dir))
    name, advice = remover_of(conf_dir, default_network_file(conf_dir))
    return failed(
        check,
        f"{where} disappeared {recent} times in the last {WINDOW_SECONDS:.0f} s and the daemon "
        f"wrote it again each time: {name or 'another agent'} removes it",
        advice or UNKNOWN_REMOVER,
    )


def ask_daemon(view: NodeView) -> tuple[dict[str, Any] | None, str]:
    """The daemon's health answer, or why there is none."""
    socket_path = Path(view.local(view.config.daemon.socket_dir)) / SOCKET_NAME
    try:
        answer = exchange(socket_path, {"protocol": PROTOCOL_VERSION, "kind": "health"}, 5.0)
    except (OSError, ValueError) as exc:
        return None, f"{socket_path} does not answer ({exc})"
    return answer, str(socket_path)


def check_daemon(view: NodeView, answer: dict[str, Any] | None, where: str) -> Iterator[Finding]:
    if answer is None:
        yield failed("daemon socket", where, DAEMON_LOGS)
        return
    yield good("daemon socket", f"{where} answers")
    socket_path = Path(where)
    if answer.get("ready") is True or is_ready(socket_path):
        yield good("readiness", "the daemon can serve an ADD")
    else:
        yield failed(
            "readiness",
            "the daemon is not ready: its caches have not listed and the API server does "
            "not answer",
            "check the API server's reachability and the daemon's log",
        )


def check_readiness_indicator(view: NodeView) -> Finding:
    check = "readiness indicator"
    indicator = view.config.engine.dirs.readiness_indicator_file
    if not indicator:
        return nothing(check, "readinessindicatorfile is not set: braid does not wait for it")
    if Path(view.local(indicator)).exists():
        return good(check, f"{indicator} exists: the default network is ready")
    return failed(
        check,
        f"readinessindicatorfile {indicator} does not exist: braid does not write its "
        "configuration and every ADD waits",
        "the default network's agent writes it once ready: check that agent's pod on this "
        "node; if it never writes that path, correct readinessindicatorfile in braid.conf "
        "(or remove it)",
    )
