"""A real daemon process in a private host namespace, driven over its socket with protocol v1:
every verb on real plugins, every error path answered exactly as the in-process engine
(`braid-thin`) answers it, metrics and structured logs.
"""

from __future__ import annotations

import base64
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call
from kernel_fake_plugins import install_failing

from braid.cni import ProcessExecutor
from braid.daemon.client import call_cni, exchange
from braid.engine import Engine

VALID_ATTACHMENTS = "cni.dev/valid-attachments"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbra", "10.232.1.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbrb", "10.232.2.0/24"))
    setup.nad("net-fail", {"cniVersion": "1.0.0", "type": install_failing(setup.plugin_dir)})
    return setup


@pytest.fixture
def daemon(engine: EngineSetup, tmp_path: Path) -> Iterator[Daemon]:
    running = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    yield running
    running.stop()
    assert running.wait() == 0


def conf(engine: EngineSetup, networks: str | None, **extra: Any) -> bytes:
    return engine.braid_conf({NETWORKS: networks} if networks else None, **extra)


def test_every_verb_on_real_plugins(engine: EngineSetup, daemon: Daemon) -> None:
    result, code = call(daemon, engine, "ADD", conf(engine, "net-a,net-b"))
    assert code == 0, result
    assert [i["name"] for i in result["interfaces"] if i.get("sandbox")] == ["eth0"]
    assert set(kernel_oracle.links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}
    host_veths = [
        n
        for n, link in kernel_oracle.links(engine.host.name).items()
        if kernel_oracle.link_kind(link) == "veth"
    ]
    assert len(host_veths) == 3, "the delegates did not run in the daemon's (host) namespace"
    assert len(engine.leases("net-a")) == 1
    status = engine.settled_record()["networkStatus"]
    assert [s["name"] for s in status] == [CLUSTER, "default/net-a", "default/net-b"]

    assert call(daemon, engine, "CHECK", conf(engine, "net-a,net-b")) == (None, 0)
    assert call(daemon, engine, "STATUS", conf(engine, None)) == (None, 0)
    version, code = call(daemon, engine, "VERSION", b"")
    assert code == 0
    assert "1.0.0" in version["supportedVersions"]
    valid = [{"containerID": engine.container_id, "ifname": "eth0"}]
    gc = conf(engine, None, cniVersion="1.1.0", **{VALID_ATTACHMENTS: valid})
    assert call(daemon, engine, "GC", gc) == (None, 0)
    assert engine.record_path.exists(), "GC removed a live attachment"

    assert call(daemon, engine, "DEL", conf(engine, "net-a,net-b")) == (None, 0)
    engine.assert_nothing_left()
    assert engine.leases("net-a") == set()
    assert engine.leases(CLUSTER) == set()


def thin(engine: EngineSetup, env: dict[str, str], stdin: bytes) -> tuple[bytes, int]:
    return Engine(executor=ProcessExecutor(host_netns=engine.host.path)).run(env, stdin)


@pytest.mark.parametrize(
    ("case", "expected_code"),
    [
        ("stdin not json", 6),
        ("no container id", 3),
        ("unknown NAD", 7),
        ("plugin fails", 999),
        ("bad CNI_ARGS", 4),
        ("unknown verb", 4),
    ],
)
def test_error_paths_answer_exactly_as_braid_thin(
    engine: EngineSetup, daemon: Daemon, case: str, expected_code: int
) -> None:
    env = engine.env("ADD")
    stdin = conf(engine, "net-a")
    if case == "stdin not json":
        stdin = b"{not json"
    elif case == "no container id":
        env["CNI_CONTAINERID"] = ""
    elif case == "unknown NAD":
        stdin = conf(engine, "no-such-nad")
    elif case == "plugin fails":
        stdin = conf(engine, "net-fail")
    elif case == "bad CNI_ARGS":
        env["CNI_ARGS"] = "K8S_POD_NAME"
    else:
        env["CNI_COMMAND"] = "FROB"
    through_daemon = call_cni(daemon.socket, env, stdin)
    assert through_daemon[1] == 1
    error = json.loads(through_daemon[0])
    assert error["code"] == expected_code, error
    engine.assert_nothing_left()
    assert through_daemon == thin(engine, env, stdin)
    engine.assert_nothing_left()


def test_protocol_errors(daemon: Daemon) -> None:
    garbage = struct.pack(">I", 5) + b"hello"
    newer = json.dumps({"protocol": 7, "kind": "cni"}).encode()
    for frame, code in ((garbage, 4), (struct.pack(">I", len(newer)) + newer, 11)):
        answer = exchange(daemon.socket, frame, 10)
        assert answer["exitCode"] == 1
        assert json.loads(base64.b64decode(answer["stdout"]))["code"] == code


def _bridge_runs(daemon: Daemon) -> float:
    """How many bridge executions the daemon's delegate histogram holds."""
    key = 'braid_daemon_phase_seconds_count{phase="delegate",plugin="bridge"} '
    found = [ln for ln in daemon.http_get("/metrics").splitlines() if ln.startswith(key)]
    return float(found[0].removeprefix(key)) if found else 0.0


def test_metrics_probes_and_logs(engine: EngineSetup, daemon: Daemon) -> None:
    assert call(daemon, engine, "ADD", conf(engine, "net-a"))[1] == 0
    added = _bridge_runs(daemon)
    assert added >= 1
    assert call(daemon, engine, "DEL", conf(engine, "net-a")) == (None, 0)
    assert daemon.http_get("/healthz") == "ok\n"
    assert daemon.http_get("/readyz") == "ready\n"
    # A request's metrics and log line follow its answer (the engine's thread writes the
    # answer first): the DEL's are given a moment.
    deadline = time.monotonic() + 2
    while True:
        text = daemon.http_get("/metrics")
        logged = [ln for ln in daemon.log_lines() if ln["msg"].startswith("DEL ")]
        if ('verb="DEL"} 1.0' in text and logged) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    for line in (
        'braid_daemon_requests_total{outcome="success",verb="ADD"} 1.0',
        'braid_daemon_requests_total{outcome="success",verb="DEL"} 1.0',
        'braid_daemon_phase_seconds_count{phase="store_lookup",plugin=""} 1.0',
        'braid_daemon_phase_seconds_count{phase="record_write",plugin=""} 1.0',
        'braid_daemon_request_seconds_count{verb="ADD"} 1.0',
        "braid_daemon_in_flight 0.0",
        "braid_daemon_queue_depth 0.0",
    ):
        assert line in text, line
    bridge_runs = [
        ln for ln in text.splitlines() if ln.startswith("braid_daemon_phase_seconds_count{")
    ]
    assert any('phase="delegate",plugin="bridge"' in ln for ln in bridge_runs), bridge_runs
    # The DEL's two delegates (the cluster network's and net-a's), run as one native
    # sequence, are each timed too.
    assert _bridge_runs(daemon) == added + 2
    answered = [ln for ln in daemon.log_lines() if ln["msg"].startswith(("ADD ", "DEL "))]
    assert len(answered) == 2
    for line in answered:
        assert line["containerId"] == engine.container_id
        assert line["pod"] == "default/web-0"


def test_a_first_delegate_started_early_for_an_add_that_fails_is_killed_unread(
    engine: EngineSetup, daemon: Daemon
) -> None:
    """braid.engine.early: after two ADDs and DELs, the next ADD's first delegate (bridge, the
    cluster network's) is started before the plan is resolved. An ADD whose plan then fails
    (its NAD was deleted meanwhile; the same braid configuration, so the early start happens)
    must leave that plugin killed, having done nothing; the ADD and DEL after it leave nothing
    behind."""
    stdin = conf(engine, "net-a")
    for _ in range(2):  # two ADDs agree on their first delegate: the next starts it early
        assert call(daemon, engine, "ADD", stdin)[1] == 0
        assert call(daemon, engine, "DEL", stdin)[1] == 0
    engine.assert_nothing_left()
    nad = next(engine.nad_dir.glob("*net-a*"))
    saved = nad.read_bytes()
    nad.unlink()

    error, code = call(daemon, engine, "ADD", stdin)

    assert code == 1
    assert "net-a" in error["msg"]
    assert "not found" in error["msg"]
    deadline = time.monotonic() + 5
    while daemon.children():
        assert time.monotonic() < deadline, "a delegate started early outlived its ADD"
        time.sleep(0.01)
    engine.assert_nothing_left()
    assert engine.leases(CLUSTER) == set(), "the early plugin must not have attached anything"
    nad.write_bytes(saved)
    assert call(daemon, engine, "ADD", stdin)[1] == 0
    assert call(daemon, engine, "DEL", stdin)[1] == 0
    engine.assert_nothing_left()
