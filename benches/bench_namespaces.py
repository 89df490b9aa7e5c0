"""Private network namespaces for the runtime benchmarks (made with iproute2, removed after)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def namespace(role: str, *, loopback_up: bool) -> Iterator[str]:
    """Yields the path of a fresh namespace `braidb-<role>-<hex>`; deletes it afterwards."""
    name = f"braidb-{role}-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        if loopback_up:
            subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield f"/run/netns/{name}"
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)
