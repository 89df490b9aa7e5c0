"""The real daemon's probes under a flood of its metrics port: an unprivileged user holds 256
silent connections to it (opening a new one for each the daemon closes), and 40 `/healthz`
probes with a 1 s timeout, kubelet's default, are every one answered on the health endpoint.

Before the health endpoint, the probes asked the metrics port, and 15-21 of 40 missed their
timeout under this flood: enough failures in a row restart the daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kernel_netns
import pytest
from kernel_daemon import Daemon

from braid.daemon.settings import MAX_PROBE_CONNECTIONS

pytestmark = pytest.mark.kernel

FLOOD = 256
PROBES = 40
NOBODY = "65534"
# Holds `count` silent connections to 127.0.0.1:`port`, replacing each one the daemon closes,
# until its stdin closes; says "held" once the first `count` are open.
_FLOOD = """
import selectors, socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
watch = selectors.DefaultSelector()
watch.register(sys.stdin, selectors.EVENT_READ)
def open_one():
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return
    conn.setblocking(False)
    watch.register(conn, selectors.EVENT_READ)
for _ in range(count):
    open_one()
print("held", flush=True)
while True:
    for key, _ in watch.select(1):
        if key.fileobj is sys.stdin:
            sys.exit(0)
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            watch.unregister(key.fileobj)
            key.fileobj.close()
            open_one()
"""
# `count` GETs of /healthz from 127.0.0.1:`port`, each within 1 s (connect to answer) or a
# miss; prints the statuses (0: a miss) and the slowest answer's seconds.
_PROBES = """
import json, socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
statuses, slowest = [], 0.0
for _ in range(count):
    deadline = time.monotonic() + 1.0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
            data = b""
            while (left := deadline - time.monotonic()) > 0:
                conn.settimeout(left)
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        statuses.append(int(data.split()[1]) if data.endswith(b"ok\\n") else 0)
    except (OSError, ValueError, IndexError):
        statuses.append(0)
    slowest = max(slowest, 1.0 - (deadline - time.monotonic()))
    time.sleep(0.05)
print(json.dumps([statuses, slowest]))
"""


@pytest.fixture
def daemon(host_netns: kernel_netns.Netns, tmp_path: Path) -> Iterator[Daemon]:
    started = Daemon(host_netns, tmp_path / "run", tmp_path / "daemon.log").start()
    yield started
    started.stop()


def in_host(daemon: Daemon, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", daemon.host.name, *argv]


def probe(daemon: Daemon, port: int) -> tuple[list[int], float]:
    done = subprocess.run(
        in_host(daemon, sys.executable, "-c", _PROBES, str(port), str(PROBES)),
        check=True,
        capture_output=True,
        text=True,
        timeout=PROBES * 2,
    )
    statuses, slowest = json.loads(done.stdout)
    return statuses, slowest


def held_connections(daemon: Daemon, port: int) -> int:
    """Connections established to `port` now, accepted or in the backlog (`ss`)."""
    done = subprocess.run(
        in_host(daemon, "ss", "-Htn", "state", "established", f"( sport = :{port} )"),
        check=True,
        capture_output=True,
        text=True,
    )
    return len(done.stdout.splitlines())


def test_a_flood_of_the_metrics_port_leaves_every_probe_answered(daemon: Daemon) -> None:
    flood = subprocess.Popen(
        in_host(
            daemon,
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *("/usr/bin/python3", "-c", _FLOOD, str(daemon.metrics_port), str(FLOOD)),
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert flood.stdout is not None
        assert flood.stdout.readline() == "held\n"
        statuses, slowest = probe(daemon, daemon.health_port)
        assert flood.poll() is None, "the flood ended before the probes did"
        held = held_connections(daemon, daemon.metrics_port)
        # The metrics endpoint is full all along: the flood replaces each one it loses.
        assert held >= MAX_PROBE_CONNECTIONS - 4, f"the flood holds only {held} connections"
    finally:
        assert flood.stdin is not None
        flood.stdin.close()
        flood.wait(10)
        assert flood.stdout is not None
        flood.stdout.close()
    missed = sum(status != 200 for status in statuses)
    sys.stderr.write(
        f"\n{FLOOD} silent connections ({held} open on the metrics port at the end): {missed} "
        f"of {PROBES} probes missed, the slowest answered in {slowest:.3f} s\n"
    )
    assert statuses == [200] * PROBES


def test_the_health_endpoint_serves_the_probes_and_nothing_else(daemon: Daemon) -> None:
    code = (
        "import sys, urllib.request as u, urllib.error as e\n"
        "for path in sys.argv[2:]:\n"
        "    try:\n"
        "        print(u.urlopen(f'http://127.0.0.1:{sys.argv[1]}{path}', timeout=5).status)\n"
        "    except e.HTTPError as error:\n"
        "        print(error.code)\n"
    )
    paths = ("/healthz", "/readyz", "/metrics", "/")
    done = subprocess.run(
        in_host(daemon, sys.executable, "-c", code, str(daemon.health_port), *paths),
        check=True,
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == ["200", "200", "404", "404"]
    assert "braid_" in daemon.http_get("/metrics")  # the metrics port still serves them
