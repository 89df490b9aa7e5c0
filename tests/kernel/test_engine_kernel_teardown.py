"""The engine on the real kernel: failure, rollback and DEL (spec section 7.2).

A failure in the middle of the list undoes what came before and attempts nothing after; DEL
works without a netns, twice, from the record after a crash of braid mid-ADD, and from what
a corrupt record still describes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import kernel_fake_plugins as fakes
import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine

pytestmark = pytest.mark.kernel

BRAID_THIN = Path(sys.executable).parent / "braid-thin"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.41.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbr2", "10.231.42.0/24"))
    return setup


def assert_leases_released(engine: EngineSetup, *networks: str) -> None:
    for network in (CLUSTER, *networks):
        assert engine.leases(network) == set(), f"leases of {network} left"


def test_failure_in_the_middle_rolls_back_and_stops(engine: EngineSetup) -> None:
    failing = fakes.install_failing(engine.plugin_dir)
    engine.nad("net-fail", {"cniVersion": "1.0.0", "type": failing})

    error, code = engine.run("ADD", {NETWORKS: "net-a,net-fail,net-b"})

    assert code == 1
    assert error["code"] == 999
    assert "refused on purpose" in error.get("details", "") + error["msg"]
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")
    assert not (engine.ipam_dir / "net-b").exists(), "an attachment after the failure ran"


def test_the_delegate_started_ahead_of_a_failure_is_killed_unread(
    engine: EngineSetup, tmp_path: Path
) -> None:
    """While a delegate runs, the next one is already started, waiting on its stdin
    (braid.cni.execution.ExecutionState): when the running one fails, the next is killed before it
    read a byte, so it did nothing, and the rollback runs as before."""
    failing = fakes.install_failing(engine.plugin_dir, delay=0.5)
    log = tmp_path / "witness.log"
    witness = fakes.install_witness(engine.plugin_dir, log)
    engine.nad("net-fail", {"cniVersion": "1.0.0", "type": failing})
    engine.nad("net-witness", {"cniVersion": "1.0.0", "type": witness})

    error, code = engine.run("ADD", {NETWORKS: "net-a,net-fail,net-witness"})

    assert (code, error["code"]) == (1, 999)
    events = [line.split() for line in log.read_text().splitlines()]
    started = [int(pid) for pid, event, command in events if (event, command) == ("started", "ADD")]
    assert len(started) == 1, f"the witness was started ahead once: {events}"
    assert [e for e in events if e[1] == "read"] == [], "it never read its configuration"
    assert not Path(f"/proc/{started[0]}").exists(), "it was killed and reaped"
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")


def test_a_network_whose_plugin_is_missing_fails_the_add_before_any_delegate(
    engine: EngineSetup,
) -> None:
    """Every attachment is prepared (plugin found, version agreed) before the first delegate
    runs: a NAD naming a plugin that is not installed fails the ADD with code 103 while nothing
    was attached, not after the networks before it were attached and rolled back."""
    engine.nad("net-ghost", {"cniVersion": "1.0.0", "type": "kghost"})

    error, code = engine.run("ADD", {NETWORKS: "net-a,net-ghost"})

    assert code == 1
    assert error["code"] == 103
    assert "kghost" in error["msg"]
    engine.assert_nothing_left()
    for network in (CLUSTER, "net-a"):
        assert not (engine.ipam_dir / network).exists(), f"a delegate of {network} ran"


def test_del_without_netns_releases_everything_it_can(engine: EngineSetup) -> None:
    engine.add("net-a,net-b")
    assert len(engine.leases("net-b")) == 1

    engine.delete("net-a,net-b", netns="")

    assert_leases_released(engine, "net-a", "net-b")
    assert not engine.record_path.exists()
    assert engine.files_naming_container() == []
    # Nothing can reach into a namespace nobody named: its interfaces go with the namespace.
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}


def test_del_twice(engine: EngineSetup) -> None:
    engine.add("net-a")
    engine.delete("net-a")
    engine.assert_nothing_left()
    engine.delete("net-a")
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")


# braid-thin's call, then the modules it imported (``braid.commands.thin``'s ``main``).
THIN_LISTING = """
import json, sys
from braid.commands.thin import main
code = main()
with open(sys.argv[1], "w") as out:
    json.dump(sorted(sys.modules), out)
sys.exit(code)
"""


def test_a_thin_del_that_finds_its_record_resolves_no_plan(
    engine: EngineSetup, tmp_path: Path
) -> None:
    """A DEL tears down what the ADD's record describes: braid-thin imports none of the plan's
    resolution (the pod's annotations, NADs, default networks) for it, only for a DEL
    without a record (``braid.engine.teardown``)."""
    engine.add("net-a")
    listing = tmp_path / "modules.json"
    argv = ["ip", "netns", "exec", engine.host.name, sys.executable, "-c", THIN_LISTING]
    done = subprocess.run(
        [*argv, str(listing)],
        env={**os.environ, **engine.env("DEL")},
        input=engine.braid_conf({NETWORKS: "net-a"}),
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    modules = set(json.loads(listing.read_text()))
    assert {"braid.engine.teardown", "braid.nad.store"} <= modules
    assert not {"braid.nad.resolve", "braid.nad.default_network", "braid.nad.annotations"} & (
        modules
    )
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def _kill_braid_mid_add(engine: EngineSetup, annotation: str, pid_file: Path) -> None:
    """Runs braid-thin in the host namespace and SIGKILLs it while the third delegate hangs."""
    stdin = engine.braid_conf({NETWORKS: annotation})
    env = {**os.environ, **engine.env("ADD")}
    argv = ["ip", "netns", "exec", engine.host.name, str(BRAID_THIN)]
    with subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        try:
            _wait_for(pid_file)
        finally:
            proc.kill()
            proc.wait()
    for pid in fakes.hanging_pids(pid_file):
        os.kill(pid, signal.SIGKILL)


def test_del_after_a_crash_between_attachments_uses_the_record(
    engine: EngineSetup, tmp_path: Path
) -> None:
    pid_file = tmp_path / "hang.pids"
    hanging = fakes.install_hanging(engine.plugin_dir, pid_file)
    engine.nad("net-hang", {"cniVersion": "1.0.0", "type": hanging})
    _kill_braid_mid_add(engine, "net-a,net-hang,net-b", pid_file)

    # The record on disk is the durable plan written before the first delegate: every entry,
    # none marked done (progress is kept in memory until the ADD's one final rewrite).
    record = engine.record()
    assert [a["ifname"] for a in record["attachments"]] == ["eth0", "net1", "net2", "net3"]
    assert [a.get("state", "planned") for a in record["attachments"]] == ["planned"] * 4
    assert all("result" not in a for a in record["attachments"])
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
    assert len(engine.leases("net-a")) == 1

    # The runtime's DEL may carry no annotations at all: the record alone drives it.
    engine.delete()

    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")


def _damage_version(data: bytes) -> bytes:
    doc = json.loads(data)
    doc["version"] = "not a number"
    return json.dumps(doc).encode()


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("damage", "del_annotation"),
    [(_damage_version, ""), (_truncate, "net-a,net-b")],
    ids=["salvageable-entries", "truncated-with-annotations"],
)
def test_corrupt_record_is_reported_and_torn_down(
    engine: EngineSetup, damage: object, del_annotation: str
) -> None:
    """Entries that still decode are torn down (no annotations needed); a record with nothing
    readable falls back to the plan from the annotations the runtime sends with DEL."""
    assert callable(damage)
    engine.add("net-a,net-b")
    engine.record_path.write_bytes(damage(engine.record_path.read_bytes()))

    annotations = {NETWORKS: del_annotation} if del_annotation else None
    error, code = engine.run("DEL", annotations)

    assert code == 1
    assert error["code"] == 5
    assert "corrupt" in error["msg"]
    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a", "net-b")
    engine.delete()


def test_del_after_an_add_refused_for_a_missing_default_network_nad(engine: EngineSetup) -> None:
    """`defaultNetworks` names a NAD that does not exist: the ADD is refused with nothing
    attached, and kubelet's DEL of that sandbox must still succeed (one that failed would
    leave the pod terminating for ever); it tears down the cluster network, which it can
    still resolve."""
    result, code = engine.run("ADD", {NETWORKS: "net-a"}, defaultNetworks=["sidecar"])
    assert (code, result["code"]) == (1, 7), result
    assert "kube-system/sidecar" in result["msg"], result
    engine.assert_nothing_left()

    engine.delete("net-a", defaultNetworks=["sidecar"])

    engine.assert_nothing_left()
    assert_leases_released(engine, "net-a")
