"""A smoke of `make bench-scale` (benches/scale, docs/scale.md) at a small size, in the
cluster tier: its own etcd and kube-apiserver, one `braidctl daemon` started as the DaemonSet
starts it, the cluster grown through the API to 2,000 pods of other nodes, 200 NADs and 1,000
ResourceClaims, then the API server restarted under the daemon. It asserts what the full run
shows: the daemon's memory does not follow the cluster, a warm ADD and DEL make no read, and
the daemon re-syncs after the restart with the same few requests it started with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from braid.errors import TRY_AGAIN_LATER

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches" / "scale"))

import scale_fleet
import scale_reboot
import scale_run

GROWTH_MIB = 5.0  # the bound docs/scale.md states from an empty cluster to the largest
READS = ("GET", "LIST")


@pytest.mark.timeout(600)
def test_the_daemon_does_not_grow_with_the_cluster_and_a_warm_add_reads_nothing(
    tmp_path: Path,
) -> None:
    report = scale_run.run(tmp_path, scale_run.STEPS["smoke"], restart=True)
    empty, grown = report["steps"][0], report["steps"][-1]
    assert grown["pods"] == 2000
    assert grown["daemon_rss_mib"] - empty["daemon_rss_mib"] < GROWTH_MIB, report
    assert grown["cached_nads"] == empty["cached_nads"] == 1  # its own pod's NAD, no other
    assert grown["cached_claims"] == 0
    for step in report["steps"]:
        requests = step["warm_add_del_requests"]
        assert [r for r in requests if r.split()[0] in READS] == [], requests
        assert requests["PATCH pods/status"] == 1, requests
    # Starting: one LIST and one WATCH a cache, never a LIST of every claim.
    assert not any("resourceclaims" in r for r in report["start_requests"]), report
    restart = report["restart"]
    assert restart["daemon_running"], restart
    assert restart["resync_seconds"] < 60, restart
    assert restart["daemon_peak_rss_mib"] - empty["daemon_rss_mib"] < GROWTH_MIB, restart
    lists = {r: n for r, n in restart["requests"].items() if r.startswith("LIST")}
    assert all(n <= 3 for n in lists.values()), restart


@pytest.mark.timeout(600)
def test_two_nodes_beside_multus_thick_churn_and_an_api_server_restart(tmp_path: Path) -> None:
    """`make bench-scale`'s multi-node run (benches/scale/scale_fleet.py) at its smallest: two
    simulated nodes driven through the compiled shim, braid's daemons then Multus thick's."""
    plan = scale_fleet.Plan(nodes=2, lifecycles=2, rate=2.0, seconds=8.0, restart_seconds=25.0)
    report = scale_fleet.run(tmp_path, plan)
    braid, multus = report["braid"], report["multus"]
    for kind in (braid, multus):  # both sides measured, not merely started
        assert kind["lifecycle"]["tally"]["failures"] == {}, kind["lifecycle"]
        assert kind["churn"]["failures"] == {}, kind["churn"]
        assert kind["churn"]["lifecycles"] >= 20, kind["churn"]
        # The driver kept to the rate asked for (a driver falling behind shows here).
        assert kind["churn"]["achieved_rate_per_node"] >= 0.8 * plan.rate, kind["churn"]
        assert kind["churn"]["lost_status"] == 0, kind["churn"]
        assert kind["churn"]["leaked_links"] == 0, kind["churn"]
        assert kind["leftover_files"] == 0, kind
        assert kind["leftover_leases"] == 0, kind  # host-local's, of the real-net pods
        assert kind["restart"]["daemons_running"], kind["restart"]
        assert kind["restart"]["in_sync_seconds"] < 60, kind["restart"]
    requests = braid["lifecycle"]["requests"]
    # Warm caches: one status write a pod, its events, no read.
    assert requests["PATCH pods/status"] == 1, requests
    assert [r for r in requests if r.split()[0] in READS] == [], requests
    # While the API server is down an ADD whose pod the daemon has not seen yet cannot read it:
    # it may answer 11 (try again later), which the runtime's retry heals, and nothing else.
    restart_churn = braid["restart"]["churn"]
    assert set(restart_churn["failures"]) <= {"ADD"}, restart_churn
    failed = restart_churn["failures"].get("ADD", 0)
    assert failed == len(restart_churn["errors"]), restart_churn  # every failure's answer seen
    answer = f"'code': {TRY_AGAIN_LATER}"
    assert all(answer in error for error in restart_churn["errors"]), restart_churn
    assert all(d["connections"] >= 1 for d in braid["rest"]["daemons"]), braid["rest"]


@pytest.mark.timeout(300)
def test_a_node_reboot_attaches_every_pod_at_once_and_leaves_nothing(tmp_path: Path) -> None:
    """`make bench-scale`'s node reboot (benches/scale/scale_reboot.py) with 20 pods: every ADD
    at once through the shim, each pod on a namespace of its own with bridge + host-local and
    macvlan, the daemon at its default concurrency; then every DEL at once."""
    report = scale_reboot.run(tmp_path, 20)
    assert report["add_failures"] == 0, report["add_errors"]
    assert report["attached"] == 20, report["unattached"]
    assert report["first_add_to_last_status_seconds"] is not None, report
    assert report["daemon_vm_hwm_mib"] <= 80e6 / (1 << 20), report  # 80 MB, the target
    assert report["del_failures"] == 0, report["del_errors"]
    assert set(report["left"].values()) == {0}, report["left"]
