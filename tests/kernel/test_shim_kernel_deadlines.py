"""The compiled shim never waits without bound on the daemon (`docs/protocol.md`, "When the
daemon is unreachable, silent or failing"): a real `braidctl daemon` stopped with SIGSTOP
(accepting, as the kernel does for it, and never answering) makes a DEL replay the record after
a few seconds and every other verb fail with code 11 after `daemonWaitSeconds` plus
`pluginTimeout`; a DEL the daemon cannot serve (code 999, an answer without a CNI error, a reset
connection) is replayed. The teardown is checked with pyroute2 in the pod's and the host's
namespaces.
"""

from __future__ import annotations

import fcntl
import json
import signal
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kernel_netns
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, install_slow
from pyroute2 import IPRoute, netns
from test_shim_kernel_forwarding import FakeDaemon, response
from test_shim_kernel_replay import DEL_ARGS, _in_host, thin_add

from braid.daemon.client import call_cni

pytestmark = pytest.mark.kernel

DEL_BOUND = 5.0  # braid_wire::answer::DEL_ANSWER_WAIT


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.61.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbr2", "10.231.62.0/24"))
    setup.nad("net-slow", {"cniVersion": "1.0.0", "type": install_slow(setup.plugin_dir, 3)})
    return setup


@pytest.fixture
def daemon(engine: EngineSetup, tmp_path: Path) -> Iterator[Daemon]:
    """A real daemon; let run again (SIGCONT) and stopped at the end, whatever the test did."""
    started = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    yield started
    started.signal(signal.SIGCONT)
    started.stop()


def links(ns_name: str) -> dict[str, str]:
    """The oracle: every link of the namespace by name, with its kind, read with pyroute2."""
    netns.pushns(ns_name)
    try:
        ipr = IPRoute()
    finally:
        netns.popns()
    found: dict[str, str] = {}
    with ipr:
        for link in ipr.get_links():
            info = link.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
            found[str(link.get_attr("IFLA_IFNAME"))] = str(kind or "")
    return found


def assert_torn_down(engine: EngineSetup) -> None:
    assert set(links(engine.pod.name)) == {"lo"}, "pod interfaces left"
    veths = [name for name, kind in links(engine.host.name).items() if kind == "veth"]
    assert veths == [], "host-side veths left"
    engine.assert_nothing_left()
    for network in (CLUSTER, "net-a", "net-b"):
        assert engine.leases(network) == set(), f"leases of {network} left"


def shim_call(
    engine: EngineSetup,
    binary: Path,
    socket_dir: Path,
    command: str,
    *,
    networks: str | None = None,
    **conf: Any,
) -> tuple[int, bytes, bytes, float]:
    """One call of `binary` in the host namespace: exit code, stdout, stderr, seconds."""
    annotations = None if networks is None else {NETWORKS: networks}
    stdin = engine.braid_conf(annotations, daemonSocketDir=str(socket_dir), **conf)
    env = {**engine.env(command), "CNI_ARGS": DEL_ARGS}
    start = time.monotonic()
    proc = _in_host(engine, binary, env, stdin)
    took = time.monotonic() - start
    assert b"Traceback" not in proc.stderr
    return proc.returncode, proc.stdout, proc.stderr, took


def settle(engine: EngineSetup) -> None:
    """Waits until the daemon has finished the ADD's record (written after its answer, under
    the container's lock), then a moment for the lock to go."""
    deadline = time.monotonic() + 20
    while not all(e.get("state") == "added" for e in engine.record()["attachments"]):
        assert time.monotonic() < deadline, "the ADD's record was never finished"
        time.sleep(0.05)
    while not locks_free(engine.root):
        assert time.monotonic() < deadline, "the daemon kept the container's lock"
        time.sleep(0.05)


def locks_free(root: Path) -> bool:
    """Whether no process holds any of braid's lock files under `root` (flock, as braid takes
    them)."""
    for path in root.rglob("locks/*"):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            file = path.open("rb")
        except FileNotFoundError:
            continue  # a container's lock file goes with its holder's release
        with file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(file, fcntl.LOCK_UN)
    return True


def test_a_stopped_daemon_holds_no_call(engine: EngineSetup, shim: Path, daemon: Daemon) -> None:
    """ADD through the daemon; SIGSTOP; CHECK and STATUS fail with code 11 after 0.5 + 1 s
    (both executables alike), and the DEL is replayed by the shim after its 5 s bound."""
    code, out, err, _ = shim_call(engine, shim, daemon.socket_dir, "ADD", networks="net-a,net-b")
    assert code == 0, out + err
    assert set(links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}
    settle(engine)

    daemon.signal(signal.SIGSTOP)
    bounds: dict[str, Any] = {"daemonWaitSeconds": 0.5, "pluginTimeout": 1}
    for command in ("CHECK", "STATUS"):
        answers = []
        for binary in (shim, shim.parent / "braid-full"):
            code, out, _, took = shim_call(engine, binary, daemon.socket_dir, command, **bounds)
            error = json.loads(out)
            assert (code, error["code"]) == (1, 11), error
            assert "did not answer within 1.5 s" in error["msg"]
            assert 1.4 <= took < 10, f"{command} took {took:.2f} s"
            answers.append(out)
        assert answers[0] == answers[1], "the front and braid-full answer alike"

    code, out, err, took = shim_call(engine, shim, daemon.socket_dir, "DEL", **bounds)

    assert (code, out) == (0, b""), err
    assert DEL_BOUND <= took < DEL_BOUND + 20, f"DEL took {took:.2f} s"
    assert b"no answer within 5 s" in err
    assert_torn_down(engine)


def test_a_daemon_stopped_holding_the_containers_lock_gets_code_11_not_a_hang(
    engine: EngineSetup, shim: Path, daemon: Daemon
) -> None:
    """Stopped mid-ADD, the daemon holds the container's lock: the shim's DEL replay waits
    for it up to daemonWaitSeconds plus pluginTimeout, then answers code 11 (try again). Once
    the daemon runs again, the DEL goes through."""
    stdin = engine.braid_conf({NETWORKS: "net-a,net-slow"})
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(call_cni, daemon.socket, engine.env("ADD"), stdin)
        pid_file = engine.plugin_dir / "kslow.pid"
        deadline = time.monotonic() + 20
        while not pid_file.exists():
            assert time.monotonic() < deadline, "the slow delegate never started"
            time.sleep(0.02)
        daemon.signal(signal.SIGSTOP)
        bounds: dict[str, Any] = {"daemonWaitSeconds": 0.5, "pluginTimeout": 2}

        code, out, err, took = shim_call(engine, shim, daemon.socket_dir, "DEL", **bounds)

        error = json.loads(out)
        assert (code, error["code"]) == (1, 11), error
        assert f"container {engine.container_id} stayed locked" in error["msg"]
        assert "for 2.5 s" in error["msg"]
        assert DEL_BOUND + 2.4 <= took < DEL_BOUND + 20, f"DEL took {took:.2f} s"
        assert engine.record_path.exists()

        daemon.signal(signal.SIGCONT)
        assert pending.result(60)[1] == 0
    code, out, err, _ = shim_call(engine, shim, daemon.socket_dir, "DEL", **bounds)
    assert (code, out) == (0, b""), err
    assert_torn_down(engine)


class ResettingDaemon(FakeDaemon):
    """Accepts, reads the frame's header only and closes: the shim's read is reset."""

    def _serve(self, server: socket.socket) -> None:
        conn = self._accept(server)
        if conn is not None:
            with conn:
                conn.settimeout(10)
                self.requests.append(conn.recv(4))


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (response(1, b'{"code": 999, "msg": "braid panicked"}'), b"it answered code 999"),
        (response(1, b""), b"without a CNI error"),
        (b"not json", b"not protocol 1"),
        (None, b"Connection reset by peer"),
    ],
    ids=["code-999", "empty-failure", "not-protocol-1", "reset"],
)
@pytest.mark.parametrize("executable", ["braid", "braid-full"])
def test_a_del_the_daemon_cannot_serve_is_replayed(
    engine: EngineSetup,
    shim: Path,
    socket_dir: Path,
    *,
    answer: bytes | None,
    why: bytes,
    executable: str,
) -> None:
    thin_add(engine, "net-a,net-b")
    assert set(links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}
    sock = socket_dir / "braid.sock"
    fake = ResettingDaemon(sock, []) if answer is None else FakeDaemon(sock, [answer])

    with fake:
        binary = shim.parent / executable
        code, out, err, _ = shim_call(engine, binary, socket_dir, "DEL")

    assert (code, out) == (0, b""), err
    assert why in err
    assert len(fake.requests) == 1, "asked once: the daemon is not asked again"
    assert_torn_down(engine)
