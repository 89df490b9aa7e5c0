"""The real daemon's sockets under abuse: the descriptor limit raised at start, 1,000 idle
connections to the metrics port that cannot starve CNI calls, 100 partial 4 MiB frames that
cannot take its memory beyond its bound, and a queued ADD whose client left while the daemon
drained, never run (the pod's DEL, replayed without the daemon, already succeeded)."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kernel_netns
import kernel_oracle
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, RssPeak, call, install_slow, release_slow

from braid.daemon.client import call_cni, cni_request
from braid.daemon.protocol import MAX_FRAME, encode_frame
from braid.daemon.scheduler import LENDS_PER_SLOT

pytestmark = pytest.mark.kernel

IDLE_CONNECTIONS = 1000
PARTIAL_FRAMES = 100
# Opens connections to the metrics port from inside the host namespace and holds them until
# its stdin closes (as many as it could keep, on its stdout).
_HOLDER = """
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    try:
        held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2))
    except OSError:
        pass
print(len(held), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbra", "10.233.0.0/16"))
    setup.nad("net-slow", {"cniVersion": "1.0.0", "type": install_slow(setup.plugin_dir, 3)})
    return setup


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for daemon in started:
        daemon.stop()


def start(engine: EngineSetup, tmp_path: Path, started: list[Daemon], **options: object) -> Daemon:
    daemon = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log", **options)  # type: ignore[arg-type]
    started.append(daemon.start())
    return daemon


def test_the_descriptor_limit_is_raised_to_the_hard_limit(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = start(engine, tmp_path, daemons, nofile=(1024, 4096))
    assert daemon.proc is not None
    limits = Path(f"/proc/{daemon.proc.pid}/limits").read_text()
    line = next(row for row in limits.splitlines() if row.startswith("Max open files"))
    assert line.split()[3:5] == ["4096", "4096"], line
    messages = [entry["msg"] for entry in daemon.log_lines()]
    assert "descriptor limit raised from 1024 to 4096 (the hard limit)" in messages


def test_idle_metrics_connections_cannot_starve_cni_calls(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    """A descriptor limit of 512 and 1,000 connections held open to the metrics port: every
    one used to take a descriptor, and each CNI call then failed with code 999."""
    daemon = start(engine, tmp_path, daemons, nofile=(512, 512))
    holder = subprocess.Popen(
        [
            *("ip", "netns", "exec", engine.host.name, sys.executable, "-c", _HOLDER),
            *(str(daemon.metrics_port), str(IDLE_CONNECTIONS)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        holder.stdout.readline()  # every connection attempted
        assert daemon.descriptors() < 512 - 100, "the metrics port's clients hold descriptors"
        assert call(daemon, engine, "DEL", engine.braid_conf({NETWORKS: "net-a"})) == (None, 0)
        assert daemon.http_get("/healthz") == "ok\n"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()


def send_partial_frame(path: Path) -> socket.socket:
    """Connects and sends a 4 MiB frame but its last KiB; the connection stays open."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(20)
    conn.connect(str(path))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused meanwhile
        conn.sendall(struct.pack(">I", MAX_FRAME) + b"x" * (MAX_FRAME - 1024))
    return conn


def test_partial_frames_cannot_take_the_memory_beyond_the_bound(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    """100 connections each sending most of a 4 MiB frame: 477 MB of resident memory before
    the bound on the bytes all connections hold (8 MiB); now the excess is answered with
    code 11 at once."""
    daemon = start(engine, tmp_path, daemons)
    at_rest = daemon.rss_kib()
    with RssPeak(daemon) as rss, ThreadPoolExecutor(16) as pool:
        held = list(pool.map(send_partial_frame, [daemon.socket] * PARTIAL_FRAMES))
    try:
        growth_mib = (rss.peak_kib - at_rest) / 1024
        sys.stderr.write(
            f"\n{PARTIAL_FRAMES} partial 4 MiB frames: RSS at rest {at_rest / 1024:.1f} MiB, "
            f"peak {rss.peak_kib / 1024:.1f} MiB\n"
        )
        assert growth_mib < 40, f"grew by {growth_mib:.0f} MiB from {at_rest / 1024:.0f} MiB"
    finally:
        for conn in held:
            conn.close()
    assert call(daemon, engine, "DEL", engine.braid_conf({NETWORKS: "net-a"})) == (None, 0)


@pytest.fixture
def other_pod() -> Iterator[kernel_netns.Netns]:
    ns = kernel_netns.create("p", loopback_up=False)
    yield ns
    kernel_netns.delete(ns)


@pytest.fixture
def filler_pods() -> Iterator[list[kernel_netns.Netns]]:
    """Pods whose slow ADDs take what a slot may lend (``LENDS_PER_SLOT`` of them)."""
    with kernel_netns.several("f", LENDS_PER_SLOT) as made:
        yield made


def test_a_draining_daemon_never_runs_an_add_whose_client_left(
    engine: EngineSetup,
    other_pod: kernel_netns.Netns,
    filler_pods: list[kernel_netns.Netns],
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    """One slot, a queue of one: pod A's slow ADD runs, and the slow ADDs of more pods take the
    slots it may lend while their delegates wait; pod B's ADD waits (the queue is full: a third
    request is refused). SIGTERM; B's client gives up; B's DEL is replayed without the daemon
    and succeeds. B's ADD must never run after that."""
    conf = engine.braid_conf({NETWORKS: "net-a,net-slow"})
    pod_b = dataclasses.replace(
        engine, pod=other_pod, container_id=f"braidb-{uuid.uuid4().hex[:8]}"
    )
    fillers = [
        dataclasses.replace(engine, pod=ns, container_id=f"braidf{i}-{uuid.uuid4().hex[:8]}")
        for i, ns in enumerate(filler_pods)
    ]
    # Held until released: the first ADD still waits once every filler reached its slow
    # delegate, however long the machine takes to get them there.
    install_slow(engine.plugin_dir, 120)
    daemon = start(engine, tmp_path, daemons, concurrency=1, extra_args=("--queue-size", "1"))
    pid_file = engine.plugin_dir / "kslow.pid"
    with ThreadPoolExecutor(1 + len(fillers)) as pool:
        try:
            pending = []
            for pod in (engine, *fillers):  # one after the other: each reaches its slow delegate
                pid_file.unlink(missing_ok=True)
                future = pool.submit(call_cni, daemon.socket, pod.env("ADD"), conf)
                deadline = time.monotonic() + 20
                while not pid_file.exists():
                    assert time.monotonic() < deadline, "the slow delegate never started"
                    if future.done():
                        # Refused at once: the request before it had its slow delegate's stdin
                        # but had not lent its slot yet. Asked again, as kubelet would.
                        assert future.result()[1] == 1, future.result()
                        future = pool.submit(call_cni, daemon.socket, pod.env("ADD"), conf)
                    time.sleep(0.02)
                pending.append(future)
                time.sleep(0.3)  # its slot lent before the next arrives
            client_b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            with contextlib.closing(client_b):
                client_b.connect(str(daemon.socket))
                client_b.sendall(encode_frame(cni_request(pod_b.env("ADD"), conf)))
                time.sleep(0.5)
                third = dataclasses.replace(engine, container_id="braidc-third")
                refused, code = call(daemon, third, "DEL", conf)
                assert code == 1
                assert refused["code"] == 11, "the queue was not full"
                daemon.signal(15)
                time.sleep(0.3)
            assert pod_b.run("DEL", {NETWORKS: "net-a,net-slow"}) == (None, 0)
        finally:
            release_slow(engine.plugin_dir)  # whatever happened: the slow ADDs end
        assert [future.result(30)[1] for future in pending] == [0] * len(pending)
    assert daemon.wait() == 0
    assert pod_b.files_naming_container() == [], "pod B's ADD ran after its DEL"
    assert set(kernel_oracle.links(other_pod.name)) == {"lo"}
    assert any(line["msg"].startswith("ADD dropped") for line in daemon.log_lines())
    for pod in (engine, *fillers):
        pod.delete("net-a,net-slow")
    engine.assert_nothing_left()


def test_a_stopped_daemon_never_runs_an_add_whose_client_left_meanwhile(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    """The daemon is stopped (SIGSTOP); an ADD's client sends its frame and gives up, and the
    pod's DEL is replayed without the daemon. Continued, the daemon finds the frame and the
    client's close together (an acceptor takes the whole frame at once): the ADD must not run."""
    conf = engine.braid_conf({NETWORKS: "net-a"})
    daemon = start(engine, tmp_path, daemons)
    daemon.signal(19)  # SIGSTOP
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(daemon.socket))  # the listener's backlog takes it while stopped
        client.sendall(encode_frame(cni_request(engine.env("ADD"), conf)))
        client.close()
        assert engine.run("DEL", {NETWORKS: "net-a"}) == (None, 0)
    finally:
        daemon.signal(18)  # SIGCONT
    deadline = time.monotonic() + 10
    while not any(line["msg"].startswith("ADD dropped") for line in daemon.log_lines()):
        assert time.monotonic() < deadline, "the daemon never dropped the ADD of a gone client"
        time.sleep(0.05)
    assert call(daemon, engine, "CHECK", conf)[1] == 1, "the ADD ran: CHECK found it"
    assert engine.files_naming_container() == [], "the ADD ran after the pod's DEL"
    assert set(kernel_oracle.links(engine.pod.name)) == {"lo"}
    engine.assert_nothing_left()
