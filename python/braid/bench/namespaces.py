"""The benchmark's own network namespaces: made with iproute2 (``ip netns add``, so they are
named under ``/run/netns`` and visible to an operator while a run lasts), removed after it,
whatever ends the run. The benchmark's thread enters its private host namespace for the
measurements (``inside_netns``), so braid and the directly executed delegates start from the
same place, the way kubelet starts either of them on a node; threads started meanwhile (the
burst's) are born there too.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "braidb-"
CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, check=False)
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip()
        raise OSError(f"ip {' '.join(args)} failed: {detail}")


def add_namespace(role: str, *, loopback_up: bool) -> str:
    """Makes ``braidb-<role>-<hex>`` and returns its path under /run/netns."""
    name = f"{PREFIX}{role}-{secrets.token_hex(4)}"
    _ip("netns", "add", name)
    if loopback_up:
        try:
            _ip("-n", name, "link", "set", "lo", "up")
        except OSError:
            remove_namespace(f"/run/netns/{name}")
            raise
    return f"/run/netns/{name}"


def remove_namespace(path: str) -> None:
    """Deletes the namespace at ``path`` (its devices go with it)."""
    _ip("netns", "del", Path(path).name)


@contextmanager
def namespace(role: str, *, loopback_up: bool) -> Iterator[str]:
    """Yields the path of a fresh namespace ``braidb-<role>-<hex>``; deletes it afterwards."""
    path = add_namespace(role, loopback_up=loopback_up)
    try:
        yield path
    finally:
        remove_namespace(path)


def leftover_namespaces() -> list[str]:
    """The names under /run/netns that this benchmark makes (left behind if any)."""
    try:
        return sorted(p.name for p in Path("/run/netns").iterdir() if p.name.startswith(PREFIX))
    except FileNotFoundError:
        return []


def _setns(fd: int) -> None:
    if _LIBC.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@contextmanager
def inside_netns(path: str) -> Iterator[None]:
    """Moves the calling thread into the namespace at ``path``, and back after."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)
