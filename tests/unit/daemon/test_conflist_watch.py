"""What the daemon sees of its conflist besides keeping it: a file removed again and again is
counted and, from the third time in ten minutes, an event names the file, the primary that
removed it (Cilium by its `.cilium_bak` trace, else the default network's agent) and the fix;
a configuration that sorts before braid's is named with its primary's fix. One event per cause
per ten minutes; the metrics, /readyz?verbose (still ready) and the health answer say the same.
The writer is the real one, on a real directory; the clock is the test's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from braid.daemon.cniconfig import ConfListFollower
from braid.daemon.conflist import BRAID_CONFLIST, ConfListWriter
from braid.daemon.conflist_watch import EVENT_SECONDS, MAX_RECENT, REMOVED, SHADOWED
from braid.daemon.probes import route
from braid.daemon.service import DaemonService

CILIUM = {"cniVersion": "1.0.0", "name": "cilium", "plugins": [{"type": "cilium-cni"}]}
CLUSTER = {"cniVersion": "1.0.0", "name": "cluster", "plugins": [{"type": "bridge"}]}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def follower(tmp_path: Path) -> tuple[ConfListFollower, Clock, list[tuple[str, str]]]:
    conf = tmp_path / "net.d"
    conf.mkdir()
    (conf / "10-cluster.conflist").write_text(json.dumps(CLUSTER))
    follower = ConfListFollower(ConfListWriter(str(conf)))
    clock = Clock()
    follower.watch.clock = clock
    told: list[tuple[str, str]] = []
    follower.watch.notify = lambda reason, message: told.append((reason, message))
    assert follower.look() == "written"
    return follower, clock, told


def remove_and_look(follower: ConfListFollower, clock: Clock, times: int) -> None:
    for _ in range(times):
        follower.writer.target.unlink()
        clock.now += 1
        assert follower.look() == "written"


def test_the_first_write_and_a_followed_change_are_no_disappearance(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
) -> None:
    kept, clock, told = follower
    changed = {**CLUSTER, "cniVersion": "0.4.0"}
    (kept.writer.target.parent / "10-cluster.conflist").write_text(json.dumps(changed))
    clock.now += 1
    assert kept.look() == "written"
    assert (kept.watch.rewrites, told) == (0, [])
    assert kept.watch.details() == [f"cni configuration: ok: {kept.writer.target} first"]


def test_a_file_removed_three_times_is_one_event_naming_the_default_networks_primary(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
) -> None:
    kept, clock, told = follower
    remove_and_look(kept, clock, 2)
    assert (kept.watch.rewrites, told) == (2, [])  # a restart of an installer, not yet a cause
    remove_and_look(kept, clock, 1)
    [(reason, message)] = told
    assert reason == REMOVED
    assert f"{kept.writer.target} disappeared 3 times in the last 600 s" in message
    assert "find the agent that removes it" in message  # a bridge network: no known primary
    remove_and_look(kept, clock, 5)
    assert len(told) == 1  # one per cause per ten minutes
    assert kept.watch.state().recentRewrites == 8
    assert "written again 8 times in the last 600 s" in kept.watch.details()[0]
    clock.now += EVENT_SECONDS + 1
    assert kept.watch.state().recentRewrites == 0  # the window moved on
    remove_and_look(kept, clock, 3)
    assert [r for r, _ in told] == [REMOVED, REMOVED]
    assert kept.watch.rewrites == 11


def test_ciliums_trace_names_cilium_and_cni_exclusive(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
) -> None:
    kept, clock, told = follower
    target = kept.writer.target
    for _ in range(3):  # what Cilium's agent does with cni.exclusive
        target.rename(target.with_name(f"{BRAID_CONFLIST}.cilium_bak"))
        clock.now += 1
        kept.look()
    [(reason, message)] = told
    assert reason == REMOVED
    assert "Cilium: Cilium owns the directory" in message
    assert "cni.exclusive=false" in message


def test_recent_rewrites_are_bounded_whatever_the_churn(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
) -> None:
    kept, clock, _ = follower
    for _ in range(MAX_RECENT + 50):
        kept.writer.target.unlink()
        clock.now += 0.01
        kept.look()
    assert kept.watch.state().recentRewrites == MAX_RECENT
    assert kept.watch.rewrites == MAX_RECENT + 50


def test_a_configuration_sorting_first_is_named_with_its_primarys_fix(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
) -> None:
    kept, clock, told = follower
    conf = kept.writer.target.parent
    (conf / "0-cilium.conflist").write_text(json.dumps(CILIUM))
    clock.now += 1
    kept.look()
    [(reason, message)] = told
    assert reason == SHADOWED
    assert message.startswith(f"{conf}/0-cilium.conflist sorts before 00-braid.conflist")
    assert "cni.exclusive=false" in message
    assert kept.watch.details() == [
        f"cni configuration: shadowed: {conf}/0-cilium.conflist sorts before "
        "00-braid.conflist, the runtime uses it (Cilium)"
    ]
    clock.now += 1
    kept.look()
    assert len(told) == 1
    (conf / "0-cilium.conflist").unlink()
    (conf / "0-other.conf").write_text('{"cniVersion": "1.0.0", "type": "x"}')
    clock.now += 1
    kept.look()
    assert kept.watch.shadow == "0-other.conf"
    assert len(told) == 1  # the same cause within ten minutes
    clock.now += EVENT_SECONDS
    kept.look()
    assert told[-1][0] == SHADOWED
    assert "have the installer that writes it give it a name" in told[-1][1]
    (conf / "0-other.conf").unlink()
    kept.look()
    assert kept.watch.shadow == ""


def test_the_daemon_reports_it_in_metrics_readiness_and_health(tmp_path: Path) -> None:
    conf = tmp_path / "net.d"
    conf.mkdir()
    (conf / "10-cluster.conflist").write_text(json.dumps(CLUSTER))
    service = DaemonService(concurrency=1, queue_size=1)
    service.follower = ConfListFollower(ConfListWriter(str(conf)))
    service.warm_up(0)
    assert service.chores is not None
    service.chores.stop()  # the test looks itself
    try:
        (conf / "0-cilium.conflist").write_text(json.dumps(CILIUM))
        for _ in range(3):
            service.follower.writer.target.unlink()
            service.follower.look()
        metrics = route(service, "/metrics")[2].decode()
        assert 'braid_daemon_cni_config_shadowed{file="0-cilium.conflist"} 1.0' in metrics
        assert "braid_daemon_cni_config_rewrites_total 3.0" in metrics
        status, _, body = route(service, "/readyz?verbose")
        assert status == 200  # neither cause makes the daemon unready
        assert body.decode().splitlines() == [
            "ready",
            f"cni configuration: shadowed: {conf}/0-cilium.conflist sorts before "
            "00-braid.conflist, the runtime uses it (Cilium)",
            f"cni configuration: removed: {conf}/00-braid.conflist written again 3 times in the "
            "last 600 s after it disappeared",
        ]
        (conf / "0-cilium.conflist").unlink()
        service.follower.look()
        metrics = route(service, "/metrics")[2].decode()
        assert 'braid_daemon_cni_config_shadowed{file=""} 0.0' in metrics
    finally:
        service.close()


def test_one_listing_of_the_directory_serves_each_look(
    follower: tuple[ConfListFollower, Clock, list[tuple[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer's search for the default network and the watch's for a shadow, and for the
    primary that removes braid's file, share one listing per look (the daemon looks every
    second on every node)."""
    kept, clock, told = follower
    conf = kept.writer.target.parent
    listed: list[str] = []
    for name in ("listdir", "scandir"):
        real = getattr(os, name)

        def counting(path: Any = ".", real: Any = real) -> Any:
            if Path(path) == conf:
                listed.append(str(path))
            return real(path)

        monkeypatch.setattr(os, name, counting)
    (conf / "0-cilium.conflist").write_text(json.dumps(CILIUM))
    remove_and_look(kept, clock, 3)  # a shadow, and a file removed again and again
    assert [r for r, _ in told] == [SHADOWED, REMOVED]
    assert "Cilium owns the directory" in told[1][1]  # the listing named the remover too
    assert len(listed) == 3, listed
