"""DEL through the compiled `braid` shim with no daemon: the attachment record, written by a real
`braid-thin` ADD, is replayed by the shim alone (`docs/protocol.md`, "When the daemon is
unreachable, silent or failing"). Both run under `ip netns exec` in the test's private host
namespace, so every host-side device stays there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, bridged_engine
from kernel_attachment import CNI_BIN_DIR

from braid.engine.spares import SPARE_SIZE

pytestmark = pytest.mark.kernel

BRAID_THIN = Path(sys.executable).parent / "braid-thin"
DEL_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=del-uid"

# A chained plugin: passes prevResult through on ADD; on DEL logs what it got, then fails while
# the marker file says "fail", or hangs with a child holding its stdout while it says "hang"
# (writing "<its pid> <child pid>" to PIDS).
_FAKE = """#!{python}
import json, os, sys
MARKER, LOG, PIDS = {marker!r}, {log!r}, {pids!r}
command = os.environ.get("CNI_COMMAND")
if command == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
if command == "ADD":
    print(json.dumps(conf["prevResult"]))
    sys.exit(0)
if command == "DEL":
    names = ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH")
    seen = {{"stdin": conf, "env": {{n: os.environ.get(n) for n in names}}}}
    with open(LOG, "a") as log:
        log.write(json.dumps(seen) + "\\n")
    mode = open(MARKER).read() if os.path.exists(MARKER) else ""
    if mode == "fail":
        print(json.dumps({{"code": 999, "msg": "kdelfail: DEL of " + conf["name"] + " refused"}}))
        sys.exit(1)
    if mode == "hang":
        import subprocess
        child = subprocess.Popen(["sleep", "300"])
        with open(PIDS, "w") as pids:
            pids.write(f"{{os.getpid()}} {{child.pid}}")
        child.wait()
"""
FAKE_TYPE = "kdelfail"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    bridges = {"net-a": ("kbr1", "10.231.51.0/24"), "net-b": ("kbr2", "10.231.52.0/24")}
    return bridged_engine(host_netns, pod_netns, tmp_path, bridges)


def _in_host(engine: EngineSetup, binary: Path, env: dict[str, str], stdin: bytes) -> Any:
    argv = ["ip", "netns", "exec", engine.host.name, str(binary)]
    return subprocess.run(
        argv, env={**os.environ, **env}, input=stdin, capture_output=True, timeout=90, check=False
    )


def thin_add(engine: EngineSetup, networks: str) -> None:
    stdin = engine.braid_conf({NETWORKS: networks})
    proc = _in_host(engine, BRAID_THIN, engine.env("ADD"), stdin)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def shim_del(engine: EngineSetup, shim: Path, socket_dir: Path, **extra: Any) -> tuple[int, bytes]:
    """DEL through the shim: no annotations (the record alone drives it), its own CNI_ARGS."""
    stdin = engine.braid_conf(None, daemonSocketDir=str(socket_dir), **extra)
    env = {**engine.env("DEL"), "CNI_ARGS": DEL_ARGS}
    proc = _in_host(engine, shim, env, stdin)
    assert b"Traceback" not in proc.stderr
    return proc.returncode, proc.stdout


def cache_entries(engine: EngineSetup) -> list[Path]:
    return kernel.files_naming(engine.cni_dir / "results", engine.container_id)


def assert_leases_released(engine: EngineSetup, *networks: str) -> None:
    for network in (CLUSTER, *networks):
        assert engine.leases(network) == set(), f"leases of {network} left"


def leave_cache_entries(engine: EngineSetup) -> None:
    """The result cache entries an earlier braid wrote beside the record (the engine keeps
    none now), each holding the record's result: the shim reads them first, then removes them."""
    record = engine.record()
    for entry in record["attachments"]:
        name = f"{entry['networkName']}-{engine.container_id}-{entry['ifname']}"
        cached = {
            "kind": "cniCacheV1",
            "containerId": engine.container_id,
            "config": "",
            "ifName": entry["ifname"],
            "networkName": entry["networkName"],
            "result": entry["result"],
        }
        (engine.cni_dir / "results").mkdir(mode=0o700, exist_ok=True)
        (engine.cni_dir / "results" / name).write_text(json.dumps(cached))


@pytest.mark.parametrize("cache", ["record-only", "cache-left-by-earlier-braid"])
def test_del_without_daemon_replays_the_record(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, cache: str
) -> None:
    thin_add(engine, "net-a,net-b")
    assert engine.record_path.exists()
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}
    assert cache_entries(engine) == [], "the engine keeps results in its record only"
    assert len(engine.leases("net-b")) == 1
    if cache == "cache-left-by-earlier-braid":
        leave_cache_entries(engine)
        assert len(cache_entries(engine)) == 3

    code, stdout = shim_del(engine, shim, no_daemon_dir)

    assert (code, stdout) == (0, b"")
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-b")
    assert cache_entries(engine) == []


def test_del_without_daemon_and_without_record_succeeds(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    assert not engine.record_path.exists()
    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")


def test_an_id_too_long_for_a_record_is_refused_at_add_and_has_nothing_to_delete(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    """Its record could not be named (`<id>.json` is over 255 bytes): the ADD is refused
    before anything runs (code 4), and each DEL, the shim's replay included, succeeds."""
    long = dataclasses.replace(engine, container_id="c" * 300)
    proc = _in_host(long, BRAID_THIN, long.env("ADD"), long.braid_conf({NETWORKS: "net-a"}))
    assert proc.returncode == 1
    error = json.loads(proc.stdout)
    assert error["code"] == 4
    assert "at most 250" in error["msg"]
    assert set(kernel.links(engine.pod.name)) == {"lo"}
    assert not engine.cni_dir.exists(), "nothing ran, nothing was written"
    for _ in range(2):
        assert shim_del(long, shim, no_daemon_dir) == (0, b"")
    assert not engine.cni_dir.exists()


@pytest.mark.parametrize("timeout", [1e30, 1.7976931348623157e308])
def test_a_huge_plugin_timeout_is_no_deadline_in_the_engine_and_the_shim(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, timeout: float
) -> None:
    stdin = engine.braid_conf({NETWORKS: "net-a"}, pluginTimeout=timeout)
    proc = _in_host(engine, BRAID_THIN, engine.env("ADD"), stdin)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}

    assert shim_del(engine, shim, no_daemon_dir, pluginTimeout=timeout) == (0, b"")
    engine.assert_nothing_left()


def _install_fake(engine: EngineSetup) -> tuple[Path, Path]:
    marker, log = engine.root / "del-mode", engine.root / "del.log"
    pids = engine.root / "hang.pids"
    script = _FAKE.format(python=sys.executable, marker=str(marker), log=str(log), pids=str(pids))
    path = engine.plugin_dir / FAKE_TYPE
    path.write_text(script)
    path.chmod(0o755)
    return marker, log


def _chained_nad(engine: EngineSetup, name: str, bridge: str, subnet: str) -> None:
    plugins = [bridge_nad(engine, bridge, subnet), {"type": FAKE_TYPE}]
    for plugin in plugins:
        plugin.pop("cniVersion", None)
    engine.nad(name, {"cniVersion": "1.0.0", "name": name, "plugins": plugins})


def _logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_failing_delegates_keep_the_record_and_every_failure_is_reported(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    marker, log = _install_fake(engine)
    _chained_nad(engine, "net-x", "kbr3", "10.231.53.0/24")
    _chained_nad(engine, "net-y", "kbr4", "10.231.54.0/24")
    thin_add(engine, "net-a,net-x,net-y")
    record_before = engine.record_path.read_bytes()
    marker.write_text("fail")

    code, stdout = shim_del(engine, shim, no_daemon_dir)

    assert code != 0
    error = json.loads(stdout)
    assert error["code"] == 999
    assert error["msg"].startswith("2 teardown step(s) failed")
    assert str(engine.record_path) in error["msg"]
    for name in ("net-x", "net-y"):
        assert f"kdelfail: DEL of {name} refused" in error["details"]
    assert engine.record_path.read_bytes() == record_before, "the record must be kept as it was"
    # Each failing list stopped at its failing plugin (reverse order: the fake runs first);
    # the other attachments were torn down all the same.
    assert set(kernel.links(engine.pod.name)) == {"lo", "net2", "net3"}
    assert_leases_released(engine, "net-a")
    assert len(engine.leases("net-x")) == 1
    assert [e["stdin"]["name"] for e in _logged(log)] == ["net-y", "net-x"]

    marker.unlink()
    log.unlink()
    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")

    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-x", "net-y")
    seen = _logged(log)
    assert [(e["stdin"]["name"], e["env"]["CNI_IFNAME"]) for e in seen] == [
        ("net-y", "net3"),
        ("net-x", "net2"),
    ]
    for entry in seen:
        assert entry["env"]["CNI_ARGS"] == DEL_ARGS
        assert entry["env"]["CNI_NETNS"] == engine.pod.path
        assert entry["env"]["CNI_CONTAINERID"] == engine.container_id
        assert entry["env"]["CNI_PATH"].split(":")[0] == str(CNI_BIN_DIR)
        prev = entry["stdin"]["prevResult"]
        assert prev["cniVersion"] == "1.0.0"
        assert any(i["name"] == entry["env"]["CNI_IFNAME"] for i in prev["interfaces"])


def test_a_hanging_delegate_is_killed_with_its_group_at_the_deadline(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    marker, _ = _install_fake(engine)
    _chained_nad(engine, "net-x", "kbr3", "10.231.53.0/24")
    thin_add(engine, "net-a,net-x")
    marker.write_text("hang")

    start = time.monotonic()
    code, stdout = shim_del(engine, shim, no_daemon_dir, pluginTimeout=1)
    elapsed = time.monotonic() - start

    pids = [int(p) for p in (engine.root / "hang.pids").read_text().split()]
    alive = [p for p in pids if kernel.process_alive(p)]
    for pid in alive:  # never leave strays, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert alive == [], "the plugin's process group survived its deadline"
    assert code != 0
    error = json.loads(stdout)
    assert error["code"] == 102
    assert "did not finish within 1 s" in error["details"]
    assert elapsed < 20
    assert engine.record_path.exists()
    assert_leases_released(engine, "net-a")

    marker.unlink()
    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")
    engine.assert_nothing_left()


def lose_the_rename(engine: EngineSetup, record: bytes) -> Path:
    """What a power failure leaves when the daemon's durable plan had reached its spare file
    (fdatasync) but not the rename to the record's name: the plan, padded with spaces, in
    `spares/`, beside a blank spare (docs/attachment-record.md, "Spare files")."""
    spares = engine.cni_dir / "spares"
    spares.mkdir(mode=0o700, exist_ok=True)
    (spares / "blank.spare").write_bytes(b" " * SPARE_SIZE)
    lost = spares / "lost.spare"
    lost.write_bytes(record.ljust(SPARE_SIZE, b" "))
    return lost


@pytest.mark.parametrize("older", [False, True], ids=["no-record", "older-record-at-the-name"])
def test_del_without_daemon_replays_a_plan_left_in_a_spare(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, older: bool
) -> None:
    thin_add(engine, "net-a,net-b")
    full = engine.record_path.read_bytes()
    engine.record_path.unlink()
    lost = lose_the_rename(engine, full)
    if older:  # a retried ADD's earlier record under the name: the spare is the newer state
        earlier = json.loads(full)
        earlier["attachments"] = earlier["attachments"][:1]
        engine.record_path.write_text(json.dumps(earlier))

    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")

    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-b")
    assert not lost.exists()
    assert not engine.record_path.exists()
    assert (engine.cni_dir / "spares" / "blank.spare").exists(), "another spare is left alone"


def cut_short(engine: EngineSetup, where: str) -> bytes:
    """What a power failure can leave of the record's last write (renamed, not flushed): a
    prefix of it. `where`: inside the second entry, after the entries, or nothing at all."""
    data = engine.record_path.read_bytes()
    at = {
        "second-entry": data.index(b'"ifname":"net1"'),
        "after-entries": data.index(b'"networkStatus"') + 20,
        "nothing": 0,
    }[where]
    engine.record_path.write_bytes(data[:at])
    return data[:at]


@pytest.mark.parametrize("where", ["second-entry", "nothing"])
def test_a_record_cut_short_is_kept_with_code_11_until_the_daemon_resolves_the_pod(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, where: str
) -> None:
    """The shim cannot know what a record cut short lost: it tears down what is left of it,
    keeps the record and answers code 11 (try again later), every time, until a DEL reaches
    the engine, which resolves the pod's networks and tears down the rest."""
    thin_add(engine, "net-a,net-b")
    cut = cut_short(engine, where)

    for _ in range(2):
        code, stdout = shim_del(engine, shim, no_daemon_dir)
        error = json.loads(stdout)
        assert (code, error["code"]) == (1, 11), error
        assert f"container {engine.container_id} is corrupt" in error["msg"]
        assert "keeps the record" in error["msg"]
        assert engine.record_path.read_bytes() == cut, "the record stays as it was"
    expected = {"lo", "net1", "net2"} if where == "second-entry" else {"lo", "eth0", "net1", "net2"}
    assert set(kernel.links(engine.pod.name)) == expected, "what is left of it was torn down"

    stdin = engine.braid_conf({NETWORKS: "net-a,net-b"})
    proc = _in_host(engine, BRAID_THIN, {**engine.env("DEL"), "CNI_ARGS": DEL_ARGS}, stdin)
    assert (proc.returncode, json.loads(proc.stdout)["code"]) == (1, 5), proc.stdout
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-b")
    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")


def test_a_record_cut_after_its_entries_is_replayed_whole(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    """Every entry was read: the shim tears all of them down, removes the record and reports
    the damage (code 5); the retry has nothing left to do."""
    thin_add(engine, "net-a,net-b")
    cut_short(engine, "after-entries")

    code, stdout = shim_del(engine, shim, no_daemon_dir)

    assert (code, json.loads(stdout)["code"]) == (1, 5)
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-b")
    assert shim_del(engine, shim, no_daemon_dir) == (0, b"")


def test_a_variable_that_is_not_utf8_is_left_out_of_the_delegates_on_both_sides(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    """The runtime's ADD and the shim's replayed DEL start their delegates with every variable
    of their environment that is UTF-8 (``braid_delegate::delegates::plugin_env``): a stray
    byte in another variable fails neither."""
    stray = {"BRAID_TEST_STRAY": "\udcff"}  # the byte 0xff, as Python holds it
    stdin = engine.braid_conf({NETWORKS: "net-a"})
    added = _in_host(engine, BRAID_THIN, {**engine.env("ADD"), **stray}, stdin)
    assert added.returncode == 0, added.stdout + added.stderr
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}

    stdin = engine.braid_conf(None, daemonSocketDir=str(no_daemon_dir))
    env = {**engine.env("DEL"), "CNI_ARGS": DEL_ARGS, **stray}
    deleted = _in_host(engine, shim, env, stdin)

    assert (deleted.returncode, deleted.stdout) == (0, b""), deleted.stderr
    assert b"panicked" not in deleted.stderr
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")
