"""The engine on the real kernel: CHECK of every attachment, GC by the runtime's
valid-attachments list, STATUS with and without the readiness indicator file.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import kernel_fake_plugins as fakes
import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine

from braid.cni.exec import ProcessExecutor, Step, StepOutcome
from braid.cni.execution import Execution, ExecutionState

pytestmark = pytest.mark.kernel

VALID_ATTACHMENTS = "cni.dev/valid-attachments"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.51.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbr2", "10.231.52.0/24"))
    return setup


@pytest.fixture
def gone_pod(engine: EngineSetup) -> Iterator[EngineSetup]:
    """A second pod on the same node, whose sandbox the test deletes (as a runtime would)."""
    ns = kernel_netns.create("g", loopback_up=False)
    yield dataclasses.replace(engine, pod=ns, container_id=f"{engine.container_id}-gone")
    if kernel_netns.exists(ns):
        kernel_netns.delete(ns)


def test_check_passes_after_add(engine: EngineSetup) -> None:
    engine.add("net-a,net-b")
    assert engine.run("CHECK", {NETWORKS: "net-a,net-b"}) == (None, 0)
    engine.delete("net-a,net-b")
    engine.assert_nothing_left()


def test_check_starts_each_delegate_while_the_one_before_runs(
    engine: EngineSetup, tmp_path: Path
) -> None:
    """A CHECK's stdins are all known before its first delegate runs (each is the record's
    result), so, as in an ADD, each plugin is started while the one before it runs and reads
    its configuration only in its turn: of two slow CHECKs in a row, the second has started
    before the first is done, and each ran once."""
    log = tmp_path / "check.log"
    slow = fakes.install_slow_check(engine.plugin_dir, log, delay=0.4)
    bridge = bridge_nad(engine, "kbr3", "10.231.53.0/24")
    del bridge["cniVersion"]
    engine.nad(
        "net-c", {"cniVersion": "1.0.0", "plugins": [bridge, {"type": slow}, {"type": slow}]}
    )
    engine.add("net-a,net-c")

    assert engine.run("CHECK", {NETWORKS: "net-a,net-c"}) == (None, 0)

    events = fakes.slow_check_events(log)
    runs = [{e: ns for p, e, ns in events if p == pid} for pid in {p for p, _, _ in events}]
    assert len(runs) == 2, f"each slow CHECK ran once: {events}"
    assert all(set(run) == {"started", "done"} for run in runs), events
    first, second = sorted(runs, key=lambda run: run["done"])
    assert second["started"] < first["done"], f"the second was not started ahead: {events}"
    engine.delete("net-a,net-c")
    engine.assert_nothing_left()


def test_the_check_started_ahead_of_a_failed_check_is_killed_unread(
    engine: EngineSetup, tmp_path: Path
) -> None:
    """When a delegate's CHECK fails, the plugin started ahead for the next one is killed
    before it read a byte: it did nothing, and nothing of it is left running."""
    log = tmp_path / "check.log"
    slow = fakes.install_slow_check(engine.plugin_dir, log, delay=0.2)
    bridge = bridge_nad(engine, "kbr3", "10.231.53.0/24")
    del bridge["cniVersion"]
    engine.nad(
        "net-c", {"cniVersion": "1.0.0", "plugins": [bridge, {"type": slow}, {"type": slow}]}
    )
    engine.add("net-c")
    (tmp_path / "check.log.fail").touch()

    error, code = engine.run("CHECK", {NETWORKS: "net-c"})

    assert (code, error["code"]) == (1, 999)
    assert "(default/net-c)" in error["msg"]
    events = fakes.slow_check_events(log)
    runs = {pid: [e for p, e, _ in events if p == pid] for pid, _, _ in events}
    assert sorted(runs.values()) == [["started"], ["started", "done"]], events
    ahead = next(pid for pid, seen in runs.items() if seen == ["started"])
    assert not Path(f"/proc/{ahead}").exists(), "it was killed and reaped"
    engine.delete("net-c")
    engine.assert_nothing_left()


def test_check_expects_the_executions_it_makes(
    engine: EngineSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugins a CHECK starts ahead are the runtime's own list (``Runtime.check_runs``):
    an attachment at 0.3.1, which has no CHECK, is neither expected nor run, and every
    execution made was expected, in its order."""
    old = bridge_nad(engine, "kbr4", "10.231.54.0/24")
    old["cniVersion"] = "0.3.1"
    engine.nad("net-old", old)
    engine.add("net-a,net-old,net-b")
    expected: list[tuple[str, str]] = []
    made: list[tuple[str, str]] = []
    declare, run = ExecutionState.declare, ProcessExecutor.run

    def expecting(self: ExecutionState, declared: Execution) -> None:
        expected.extend((path, env["CNI_IFNAME"]) for path, env in declared.expected)
        declare(self, declared)

    def running(
        self: ProcessExecutor,
        steps: Sequence[Step],
        *,
        timeout: float | None,
        state: ExecutionState,
    ) -> list[StepOutcome]:
        # The VERSION questions that decide which plugins have a CHECK are no CHECK execution.
        made.extend(
            (p, env["CNI_IFNAME"]) for p, env, _, _ in steps if env["CNI_COMMAND"] == "CHECK"
        )
        return run(self, steps, timeout=timeout, state=state)

    monkeypatch.setattr(ExecutionState, "declare", expecting)
    monkeypatch.setattr(ProcessExecutor, "run", running)

    assert engine.run("CHECK", {NETWORKS: "net-a,net-old,net-b"}) == (None, 0)

    assert made == expected
    assert [ifname for _, ifname in made if ifname != "eth0"] == ["net1", "net3"]
    monkeypatch.undo()
    engine.delete("net-a,net-old,net-b")
    engine.assert_nothing_left()


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (["link", "del", "net2"], "net2"),  # braid's own check: the interface is gone
        (
            ["addr", "flush", "dev", "net2"],
            "Failed to match addr 10.231.52.",
        ),  # the delegate's CHECK: its address is gone
    ],
    ids=["interface-removed", "address-removed"],
)
def test_check_covers_secondary_attachments(
    engine: EngineSetup, breakage: list[str], expected: str
) -> None:
    engine.add("net-a,net-b")
    subprocess.run(["ip", "-n", engine.pod.name, *breakage], check=True)

    error, code = engine.run("CHECK", {NETWORKS: "net-a,net-b"})

    assert code == 1
    assert isinstance(error, dict)
    assert "(default/net-b)" in error["msg"]
    assert expected in error["msg"] + error.get("details", "")
    engine.delete("net-a,net-b")
    engine.assert_nothing_left()


def test_gc_removes_what_the_runtime_no_longer_has(
    engine: EngineSetup, gone_pod: EngineSetup
) -> None:
    engine.add("net-a")
    gone_pod.add("net-a,net-b")
    assert len(engine.leases("net-a")) == 2
    kernel_netns.delete(gone_pod.pod)

    valid = [{"containerID": engine.container_id, "ifname": "eth0"}]
    result, code = engine.run(
        "GC", None, netns="", cniVersion="1.1.0", **{VALID_ATTACHMENTS: valid}
    )

    assert (result, code) == (None, 0)
    assert not gone_pod.record_path.exists()
    assert gone_pod.files_naming_container() == []
    assert engine.leases("net-b") == set()
    live_ips = {a.split("/")[0] for a in kernel.addresses(engine.pod.name, "net1")}
    assert engine.leases("net-a") == live_ips
    assert len(engine.leases(CLUSTER)) == 2  # the live pod's IPv4 and IPv6 leases
    assert engine.record_path.exists()
    assert engine.run("CHECK", {NETWORKS: "net-a"}) == (None, 0)

    engine.delete("net-a")
    engine.assert_nothing_left()
    assert engine.leases(CLUSTER) == set()


def test_status_follows_the_readiness_indicator(engine: EngineSetup, tmp_path: Path) -> None:
    indicator = tmp_path / "ready"
    error, code = engine.run("STATUS", None, readinessindicatorfile=str(indicator))
    assert code == 1
    assert error["code"] == 50
    assert str(indicator) in error["msg"]

    indicator.write_text("")
    assert engine.run("STATUS", None, readinessindicatorfile=str(indicator)) == (None, 0)


def test_status_without_an_indicator_reports_the_default_network(engine: EngineSetup) -> None:
    assert engine.run("STATUS") == (None, 0)
    (engine.conf_dir / f"{CLUSTER}.conflist").unlink()
    error, code = engine.run("STATUS")
    assert code == 1
    assert error["code"] == 7
    assert CLUSTER in error["msg"]
