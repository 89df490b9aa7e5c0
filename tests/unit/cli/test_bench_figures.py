"""`braidctl bench`'s arithmetic and bookkeeping, without namespaces: the paired figures
(median and 90th percentile of the per-round differences), the random pause before each call,
the rounds' order of sides and verbs, the pods DELed whatever ends a run, and the report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from braid.bench.burst import BurstFigures
from braid.bench.paired import OverheadRecord, median_interval, p90
from braid.bench.report import document, text
from braid.bench.rounds import Attached, Rounds
from braid.bench.run import BenchOutcome, BenchPlan

NETWORK = {
    "cniVersion": "1.0.0",
    "name": "n",
    "plugins": [{"type": "bridge", "ipam": {"type": "host-local"}}, {"type": "tuning"}],
}


def test_figures_are_paired_differences_not_differences_of_medians() -> None:
    record = OverheadRecord(spread=0)
    for direct, braid in [(10.0, 11.0), (20.0, 20.5), (30.0, 34.0)]:
        record.add("ADD", "direct", direct)
        record.add("ADD", "braid", braid)
    fig = record.figures()["ADD"]
    assert fig.rounds == 3
    assert fig.direct_median == 20.0
    assert fig.measured_median == 20.5
    assert fig.overhead_median == 1.0  # the differences are 1.0, 0.5, 4.0
    assert fig.overhead_p90 == pytest.approx(3.4)


def test_an_operation_without_a_pair_for_every_round_is_left_out() -> None:
    record = OverheadRecord(spread=0)
    record.add("DEL", "direct", 1.0)
    record.add("DEL", "direct", 1.0)
    record.add("DEL", "braid", 1.0)
    assert record.figures() == {}


def test_p90_of_one_value_is_that_value() -> None:
    assert p90([0.25]) == 0.25
    assert p90([float(i) for i in range(11)]) == 9.0


@pytest.mark.parametrize(
    ("n", "ranks"),
    # The sign test's 95 % ranks (1-based), as tabulated: n=10 -> 2nd and 9th, n=100 -> 40th
    # and 61st, n=200 -> 86th and 115th.
    [(10, (2, 9)), (100, (40, 61)), (200, (86, 115))],
)
def test_median_interval_is_the_sign_tests(n: int, ranks: tuple[int, int]) -> None:
    values = [float(i) for i in range(n, 0, -1)]  # any order: sorted first
    assert median_interval(values) == (float(ranks[0]), float(ranks[1]))


def test_median_interval_of_too_few_values_is_their_range() -> None:
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_figures_carry_the_interval_of_the_median() -> None:
    record = OverheadRecord(spread=0)
    for i in range(100):
        record.add("DEL", "direct", 1.0)
        record.add("DEL", "braid", 1.0 + i / 1000)
    fig = record.figures()["DEL"]
    assert (fig.overhead_low, fig.overhead_high) == pytest.approx((0.039, 0.060))


def test_each_call_waits_a_random_pause_within_the_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr("braid.bench.paired.time.sleep", pauses.append)
    record = OverheadRecord(spread=0.02)
    for _ in range(50):
        record.timed("VERSION", "direct", lambda: None)
    assert len(pauses) == 50
    assert all(0 <= p <= 0.02 for p in pauses)
    assert len(set(pauses)) == 50
    quiet = OverheadRecord(spread=0)
    quiet.timed("VERSION", "direct", lambda: None)
    assert len(pauses) == 50


@dataclass
class FakePod:
    name: str
    log: list[str]
    extra: int = 0
    fail_on: str = ""

    def _do(self, verb: str) -> None:
        self.log.append(f"{self.name} {verb}")
        if verb == self.fail_on:
            raise RuntimeError(f"{self.name} {verb} failed")

    def add(self) -> None:
        self._do("ADD")

    def check(self) -> None:
        self._do("CHECK")

    def delete(self) -> None:
        self._do("DEL")

    def version(self) -> None:
        self._do("VERSION")


def test_rounds_run_every_verb_per_side_in_a_varying_order() -> None:
    log: list[str] = []
    record = OverheadRecord(spread=0)
    with Attached() as attached:
        rounds = Rounds(FakePod("d", log), FakePod("b", log), record, attached)
        for _ in range(20):
            rounds.round()
    firsts = {log[i][0] for i in range(0, len(log), 8)}
    assert firsts == {"d", "b"}  # each side goes first in some round
    assert log[:4] in (
        ["d VERSION", "d ADD", "d CHECK", "d DEL"],
        ["b VERSION", "b ADD", "b CHECK", "b DEL"],
    )
    assert {fig.rounds for fig in record.figures().values()} == {20}
    assert set(record.figures()) == {"VERSION", "ADD", "CHECK", "DEL"}


def test_warm_up_is_forgotten() -> None:
    record = OverheadRecord(spread=0)
    with Attached() as attached:
        rounds = Rounds(FakePod("d", []), FakePod("b", []), record, attached)
        rounds.warm_up()
        assert record.samples == {}


def test_a_failure_leaves_no_pod_attached() -> None:
    """CHECK fails on the braid side: the exception ends the rounds, and every pod that was
    ADDed and not DELed is DELed on the way out (the direct one too, if it went first)."""
    log: list[str] = []
    calls_on_exit: list[str] = []
    record = OverheadRecord(spread=0)
    direct, braid = FakePod("d", log), FakePod("b", log, fail_on="CHECK")
    attached = Attached(on_exit=lambda: calls_on_exit.append("hold"))
    with pytest.raises(RuntimeError, match="b CHECK failed"), attached:
        Rounds(direct, braid, record, attached).round()
    assert calls_on_exit == ["hold"]
    assert log[-1] == "b DEL"
    assert attached.pods == {}
    assert log.count("d ADD") == log.count("d DEL")


def test_a_failing_teardown_del_is_collected() -> None:
    pod = FakePod("b", [], fail_on="DEL")
    with Attached() as attached:
        attached.add(pod)
    assert attached.failures == ["b DEL failed"]


def plan() -> BenchPlan:
    return BenchPlan(
        mode="thick",
        network=NETWORK,
        source="/etc/cni/net.d/n.conflist",
        nad_name="n",
        bin_dir="/opt/cni/bin",
        executable=Path("/usr/bin/braid"),
        rounds=2,
        extra_networks=1,
        burst=4,
        parallel=2,
        spread=0.02,
    )


def test_report_document_and_table() -> None:
    record = OverheadRecord(spread=0)
    for verb, direct, braid in [("DEL", 0.030, 0.032), ("VERSION", 0.004, 0.001)]:
        for _ in range(2):
            record.add(verb, "direct", direct)
            record.add(verb, "braid", braid)
    outcome = BenchOutcome(
        "0123abcd",
        record.figures(),
        BurstFigures(
            pods=4,
            parallel=2,
            add_seconds=0.5,
            del_seconds=0.25,
            direct_add_seconds=0.4,
            direct_del_seconds=0.5,
        ),
        {"rest": 30720, "peak": 34816},
    )
    doc = document(plan(), outcome, version="1.2.3", load_before=(1, 2, 3), load_after=(1, 1, 1))
    assert list(doc["verbs"]) == ["VERSION", "DEL"]  # the verbs' order, not the alphabet's
    assert doc["verbs"]["DEL"] == {
        "rounds": 2,
        "direct_median_ms": 30.0,
        "braid_median_ms": 32.0,
        "overhead_median_ms": 2.0,
        "overhead_p90_ms": 2.0,
        "overhead_median_95_ms": [2.0, 2.0],
    }
    assert doc["verbs"]["VERSION"]["overhead_median_ms"] == -3.0
    assert doc["network"]["plugins"] == ["bridge", "host-local", "tuning"]
    assert doc["burst"]["add_pods_per_second"] == 8.0
    assert doc["burst"]["del_pods_per_second"] == 16.0
    assert doc["burst"]["direct_add_pods_per_second"] == 10.0
    assert doc["burst"]["direct_del_pods_per_second"] == 8.0
    assert doc["run_id"] == "0123abcd"
    json.dumps(doc)  # plain data
    table = text(doc)
    assert "braid 1.2.3 thick mode: network n (bridge+host-local+tuning" in table
    assert "load average 1.00 2.00 3.00 before" in table
    assert (
        "DEL               30.00         32.00            +2.00      +2.00..+2.00         +2.00"
        in table
    )
    assert "ADD 0.50 s (8.0 pods/s), DEL 0.25 s (16.0 pods/s)" in table
    assert "delegates directly: ADD 0.40 s (10.0 pods/s), DEL 0.50 s (8.0 pods/s)" in table
    assert "daemon resident size: rest 30.0 MiB, peak 34.0 MiB" in table
