"""A tenant cannot reach root through braid (issue 24, the HIGH finding), end to end with the
compiled shim, `braidctl daemon` and `braid-thin`.

The reproduction: a tenant's directory, open to all (an emptyDir of another of its pods),
holds `records` as a link to braid's real record directory and `bin/braid` as a script; its
NAD names braid as the delegate with that directory as `cniDir` and `binDir`. The pod's ADD is
refused with code 7 before anything runs: nothing attached (pyroute2), the script never ran,
the real record intact, and the pod's DEL succeeds. Then the shim's own defenses: a path on
stdin that is open to others is refused, the replay never follows a link to a record, and the
node file beside the shim decides the trusted paths whatever stdin says.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call

pytestmark = pytest.mark.kernel

BRAID_THIN = Path(sys.executable).parent / "braid-thin"
OTHER = "braidt-victim0"  # the container whose record the tenant aims at
NOBODY = 65534


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.61.0/24"))
    return setup


@pytest.fixture
def tenant(engine: EngineSetup, shim: Path) -> Iterator[Path]:
    """The tenant's open directory: `records` a link to braid's, `bin/braid` a script that
    leaves a marker; and braid's own shim findable as a delegate, as on a node."""
    top = Path(tempfile.mkdtemp(prefix="braid-tenant-"))
    (top / "bin").mkdir()
    script = top / "bin" / "braid"
    script.write_text(f"#!/bin/sh\necho \"$CNI_COMMAND\" >> {top}/marker\necho '{{}}'\n")
    for path in (top, top / "bin", script):
        path.chmod(0o777)
        os.chown(path, NOBODY, NOBODY)
    (engine.cni_dir / "records").mkdir(parents=True, mode=0o700, exist_ok=True)
    (top / "records").symlink_to(engine.cni_dir / "records")
    for name in ("braid", "braid-full"):
        shutil.copy2(shim.parent / name, engine.plugin_dir / name)
    yield top
    shutil.rmtree(top)


def hostile_nad(engine: EngineSetup, tenant: Path, kind: str = "braid") -> None:
    engine.nad(
        "evil",
        {
            "cniVersion": "1.0.0",
            "type": kind,
            "cniDir": str(tenant),
            "binDir": str(tenant / "bin"),
            "daemonSocketDir": str(tenant),
            "daemonWaitSeconds": 1,
        },
    )


def in_host(engine: EngineSetup, binary: Path, env: dict[str, str], stdin: bytes) -> Any:
    argv = ["ip", "netns", "exec", engine.host.name, str(binary)]
    proc = subprocess.run(
        argv, env={**os.environ, **env}, input=stdin, capture_output=True, timeout=90, check=False
    )
    assert b"Traceback" not in proc.stderr, proc.stderr
    return proc


def as_container(engine: EngineSetup, command: str, container: str) -> dict[str, str]:
    return {**engine.env(command), "CNI_CONTAINERID": container}


def victim_record(engine: EngineSetup, binary: Path, socket_dir: Path) -> bytes:
    """A real pod attached through `binary` (its record is what the tenant aims at)."""
    stdin = engine.braid_conf({NETWORKS: "net-a"}, daemonSocketDir=str(socket_dir))
    proc = in_host(engine, binary, as_container(engine, "ADD", OTHER), stdin)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (engine.cni_dir / "records" / f"{OTHER}.json").read_bytes()


def same_record(engine: EngineSetup, record: bytes) -> bool:
    """The victim's record still describes the same attachments (the daemon may add to an
    entry once it has answered)."""

    def attachments(data: bytes) -> list[tuple[str, str]]:
        doc = json.loads(data)
        return [(a["networkName"], a["ifname"]) for a in doc["attachments"]]

    now = (engine.cni_dir / "records" / f"{OTHER}.json").read_bytes()
    return attachments(now) == attachments(record) != []


def refused_and_nothing_run(
    engine: EngineSetup, binary: Path, socket_dir: Path, tenant: Path, record: bytes
) -> None:
    links = set(kernel.links(engine.pod.name))
    stdin = engine.braid_conf({NETWORKS: "evil"}, daemonSocketDir=str(socket_dir))
    proc = in_host(engine, binary, engine.env("ADD"), stdin)
    error = json.loads(proc.stdout)
    assert (proc.returncode, error["code"]) == (1, 7), error
    assert "default/evil" in error["msg"], error
    assert "'braid'" in error["msg"], error
    assert set(kernel.links(engine.pod.name)) == links, "something was attached"
    assert not (tenant / "marker").exists(), "the tenant's script ran"
    assert same_record(engine, record)
    assert not engine.record_path.exists()
    stdin = engine.braid_conf(None, daemonSocketDir=str(socket_dir))
    proc = in_host(engine, binary, engine.env("DEL"), stdin)
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stdout + proc.stderr
    proc = in_host(engine, binary, as_container(engine, "DEL", OTHER), stdin)
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stdout + proc.stderr
    assert not (tenant / "marker").exists(), "the tenant's script ran"
    engine.assert_nothing_left()


def test_the_reproduction_through_the_daemon_is_refused(
    engine: EngineSetup, shim: Path, socket_dir: Path, tenant: Path, tmp_path: Path
) -> None:
    hostile_nad(engine, tenant)
    daemon = Daemon(engine.host, socket_dir, tmp_path / "daemon.log").start()
    try:
        record = victim_record(engine, shim, socket_dir)
        refused_and_nothing_run(engine, shim, socket_dir, tenant, record)
    finally:
        daemon.stop()


@pytest.mark.parametrize("kind", ["braid", "braid-thin", "multus-shim"])
def test_the_reproduction_through_braid_thin_is_refused(
    engine: EngineSetup, socket_dir: Path, tenant: Path, kind: str
) -> None:
    hostile_nad(engine, tenant, kind)
    record = victim_record(engine, BRAID_THIN, socket_dir)
    if kind != "braid":  # the message names the type given
        stdin = engine.braid_conf({NETWORKS: "evil"})
        error = json.loads(in_host(engine, BRAID_THIN, engine.env("ADD"), stdin).stdout)
        assert error["code"] == 7, error
        assert repr(kind) in error["msg"], error
        (tenant / "bin" / "braid").rename(tenant / "bin" / kind)
        hostile_nad(engine, tenant, "braid")
    refused_and_nothing_run(engine, BRAID_THIN, socket_dir, tenant, record)


def shim_del(engine: EngineSetup, shim: Path, container: str, **keys: Any) -> Any:
    """A DEL through the compiled shim with braid's keys on stdin (no daemon listens)."""
    stdin = engine.braid_conf(None, **keys)
    return in_host(engine, shim, as_container(engine, "DEL", container), stdin)


@pytest.fixture
def victim(engine: EngineSetup, socket_dir: Path) -> Iterator[bytes]:
    """A real record (attached by braid-thin) that DELs below aim at; torn down after."""
    record = victim_record(engine, BRAID_THIN, socket_dir)
    yield record
    stdin = engine.braid_conf(None)
    in_host(engine, BRAID_THIN, as_container(engine, "DEL", OTHER), stdin)


def test_a_path_on_stdin_open_to_others_is_refused(
    engine: EngineSetup, shim: Path, socket_dir: Path, tenant: Path, victim: bytes
) -> None:
    links = set(kernel.links(engine.pod.name))
    cases = [("cniDir", tenant), ("binDir", tenant / "bin"), ("daemonSocketDir", tenant)]
    for key, value in cases:
        keys = {"daemonSocketDir": str(socket_dir), key: str(value)}
        proc = shim_del(engine, shim, OTHER, **keys)
        error = json.loads(proc.stdout)
        assert error["code"] == 7, error
        assert f"`{key}`" in error["msg"], error
        assert str(value) in error["msg"], error
    assert set(kernel.links(engine.pod.name)) == links
    assert same_record(engine, victim)
    assert not (tenant / "marker").exists()


@pytest.mark.parametrize("link", ["records", "record"])
def test_the_replay_never_follows_a_link_to_a_record(
    engine: EngineSetup, shim: Path, socket_dir: Path, tmp_path: Path, *, victim: bytes, link: str
) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    real = engine.cni_dir / "records"
    if link == "records":
        (closed / "records").symlink_to(real)
    else:
        (closed / "records").mkdir(mode=0o700)
        (closed / "records" / f"{OTHER}.json").symlink_to(real / f"{OTHER}.json")
    links = set(kernel.links(engine.pod.name))
    proc = shim_del(engine, shim, OTHER, cniDir=str(closed), daemonSocketDir=str(socket_dir))
    error = json.loads(proc.stdout)
    assert error["code"] == 7, error
    assert "symbolic link" in error["msg"], error
    assert set(kernel.links(engine.pod.name)) == links, "the replay tore something down"
    assert same_record(engine, victim)


def test_the_node_file_beside_the_shim_decides_the_trusted_paths(
    engine: EngineSetup,
    shim: Path,
    socket_dir: Path,
    tmp_path: Path,
    *,
    tenant: Path,
    victim: bytes,
) -> None:
    installed = tmp_path / "node-bin"
    installed.mkdir(mode=0o700)
    for name in ("braid", "braid-full"):
        shutil.copy2(shim.parent / name, installed / name)
    node = installed / "braid-node.json"
    keys = {"cniDir": str(engine.cni_dir), "daemonSocketDir": str(socket_dir)}
    node.write_text(json.dumps({**keys, "binDir": "/usr/lib/cni"}))
    node.chmod(0o666)
    proc = shim_del(engine, installed / "braid", OTHER, cniDir=str(tenant))
    error = json.loads(proc.stdout)
    assert error["code"] == 7, error
    assert "writable by group or others" in error["msg"], error
    node.chmod(0o644)
    proc = shim_del(engine, installed / "braid", OTHER, cniDir=str(tenant), binDir=str(tenant))
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stdout + proc.stderr
    assert not (engine.cni_dir / "records" / f"{OTHER}.json").exists(), "the node's record"
    assert not (tenant / "marker").exists()


def test_braid_thin_and_the_daemon_refuse_open_paths_on_stdin_too(
    engine: EngineSetup, socket_dir: Path, tmp_path: Path, tenant: Path
) -> None:
    """A nested braid-thin (a delegate of another meta-plugin) or a call the daemon serves
    without the operator's configuration reads the paths by the shim's rule."""
    links = set(kernel.links(engine.pod.name))
    stdin = engine.braid_conf({NETWORKS: "net-a"}, binDir=str(tenant / "bin"))
    error = json.loads(in_host(engine, BRAID_THIN, engine.env("ADD"), stdin).stdout)
    assert error["code"] == 7, error
    assert "`binDir`" in error["msg"], error
    daemon = Daemon(engine.host, socket_dir, tmp_path / "daemon.log").start()
    try:
        # Straight to the daemon's socket: the shim would refuse this stdin itself.
        stdin = engine.braid_conf({NETWORKS: "net-a"}, cniDir=str(tenant))
        error, code = call(daemon, engine, "ADD", stdin)
        assert (code, error["code"]) == (1, 7), error
        assert "`cniDir`" in error["msg"], error
    finally:
        daemon.stop()
    assert set(kernel.links(engine.pod.name)) == links, "something was attached"
    assert not (tenant / "marker").exists()
    assert not (tenant / "engine").exists(), "braid wrote into the tenant's directory"
