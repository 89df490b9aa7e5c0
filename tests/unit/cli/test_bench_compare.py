"""`braidctl bench --mode compare` without namespaces: the interval of a median on known data,
several sides paired with one direct side in the same rounds, the report of each pod size, and
the command line's checks of what only compare mode takes."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

from braid.bench.compare import CompareRun, CompareSides, side_pods
from braid.bench.compare_report import compare_document, compare_lines
from braid.bench.direct import DirectPod
from braid.bench.multus_side import multus_conf
from braid.bench.paired import Figures, OverheadRecord, median_interval
from braid.bench.rounds import Attached, Rounds
from braid.bench.world import World
from braid.commands import bench
from braid.commands.bench_plan import extra_counts, plan_of, pod_sizes
from braid.errors import CniError


def test_median_interval_on_known_data() -> None:
    """n = 20: the sign test's 95 % interval runs from the 6th to the 15th value (the
    Binomial(20, 1/2) tail up to 5 is 0.0207, up to 6 is 0.0577), its 80 % interval from the
    7th to the 14th (up to 7: 0.1316)."""
    values = [0.3, -1.2, 4.0, 2.2, 0.9, 1.1, 7.5, -0.4, 1.6, 0.0, 2.9, 1.3, 0.7, 3.3, 1.9, 0.5]
    values += [2.5, 1.0, 6.1, -2.0]
    ordered = sorted(values)
    assert median_interval(values) == (ordered[5], ordered[14]) == (0.5, 2.5)
    assert median_interval(values, confidence=0.8) == (ordered[6], ordered[13]) == (0.7, 2.2)


def test_each_side_is_paired_with_the_direct_side_of_its_round() -> None:
    record = OverheadRecord(measured="thin", spread=0)
    rows = [(10.0, 14.0, 11.0, 12.0), (20.0, 25.0, 19.0, 22.0), (30.0, 31.0, 30.5, 36.0)]
    for direct, thin, thick, multus in rows:
        for side, value in (("direct", direct), ("thin", thin), ("thick", thick)):
            record.add("ADD", side, value)
        record.add("ADD", "multus", multus)
    assert record.figures()["ADD"].overhead_median == 4.0  # differences 4, 5, 1
    assert record.figures("thick")["ADD"].overhead_median == 0.5  # 1, -1, 0.5
    multus = record.figures("multus")["ADD"]
    assert (multus.overhead_median, multus.measured_median, multus.direct_median) == (
        2.0,
        22.0,
        20.0,
    )
    assert record.figures("nobody") == {}


@dataclass
class LoggingPod:
    name: str
    log: list[str]
    extra: int = 0

    def add(self) -> None:
        self.log.append(f"{self.name} ADD")

    def check(self) -> None:
        self.log.append(f"{self.name} CHECK")

    def delete(self) -> None:
        self.log.append(f"{self.name} DEL")

    def version(self) -> None:
        self.log.append(f"{self.name} VERSION")


def test_every_side_runs_every_verb_each_round_in_a_varying_order() -> None:
    log: list[str] = []
    record = OverheadRecord(measured="thin", spread=0)
    others = (("thick", LoggingPod("k", log)), ("multus", LoggingPod("m", log)))
    with Attached() as attached:
        rounds = Rounds(LoggingPod("d", log), LoggingPod("t", log), record, attached, others=others)
        for _ in range(30):
            rounds.round()
    per_round = [log[i : i + 16] for i in range(0, len(log), 16)]
    assert {r[0][0] for r in per_round} == {"d", "t", "k", "m"}  # each side goes first
    assert all(sorted(e[0] for e in r) == sorted("dtkm" * 4) for r in per_round)
    for side in ("thin", "thick", "multus"):
        assert {f.rounds for f in record.figures(side).values()} == {30}


def figures(overhead: float) -> Figures:
    return Figures(
        rounds=3,
        direct_median=0.010,
        measured_median=0.010 + overhead,
        overhead_median=overhead,
        overhead_p90=overhead * 2,
        overhead_low=overhead - 0.001,
        overhead_high=overhead + 0.002,
    )


def test_compare_report_per_pod_size_and_side() -> None:
    verbs = {"VERSION": figures(0.001), "ADD": figures(0.0636), "DEL": figures(-0.0005)}
    doc = compare_document({1: {"thin": verbs, "thick": verbs, "floor": verbs}, 3: {"thin": verbs}})
    assert list(doc) == ["1", "3"]
    assert doc["1"]["direct"] == {"VERSION": 10.0, "ADD": 10.0, "DEL": 10.0}
    assert doc["1"]["thick"]["ADD"] == {
        "median_ms": 73.6,
        "overhead_median_ms": 63.6,
        "overhead_median_95_ms": [62.6, 65.6],
        "overhead_p90_ms": 127.2,
    }
    lines = compare_lines(doc)
    assert "1 attachment (ms)" in lines[1]
    assert any(line.startswith("3 attachments (ms)") for line in lines)
    assert lines[2].split() == ["side", "VERSION", "ADD", "DEL"]
    assert lines[3].split() == ["directly", "10.00", "10.00", "10.00"]
    thick = next(line for line in lines if line.startswith("braid thick"))
    assert thick.split()[2:] == ["11.00", "+63.60", "(+62.60..+65.60)", "-0.50", "(-1.50..+1.50)"]
    assert not any(line.startswith("Multus thin") for line in lines)
    floor = [line for line in lines if line.startswith("noise floor")]
    assert len(floor) == 1  # the 1-attachment table's; the other has none
    assert floor[0].split()[3:] == ["+63.60", "(+62.60..+65.60)", "-0.50", "(-1.50..+1.50)"]
    # The floor comes last, after every measured side.
    assert lines.index(floor[0]) == lines.index(thick) + 1


def test_the_noise_floor_is_always_a_side() -> None:
    """The delegates again, as a pod of their own, paired like every other side."""
    world = World(Path("/nonexistent"), "", "/usr/lib/cni", {"name": "n", "plugins": []}, [])
    sides = CompareSides(thin=Path("/t"), shim=Path("/s"))
    assert sides.names() == ["thin", "thick", "floor"]
    assert CompareSides(Path("/t"), Path("/s"), Path("/m")).names()[-2:] == ["multus", "floor"]
    run = CompareRun(world, sides, "/proc/self/ns/net", "r1", ("ADD",), 0.0)
    direct, measured = side_pods(run, 2)
    floor = dict(measured)["floor"]
    assert isinstance(floor, DirectPod)
    assert floor is not direct
    assert (floor.extra, direct.extra) == (2, 2)
    assert floor.container_id != direct.container_id  # two pods, never one pod twice


@pytest.mark.parametrize(("value", "counts"), [("0", (0,)), ("0,2", (0, 2)), ("16,1", (16, 1))])
def test_extra_networks_is_one_count_or_several(value: str, counts: tuple[int, ...]) -> None:
    assert extra_counts(value) == counts


@pytest.mark.parametrize("value", ["", "-1", "17", "0,0", "1,,2", "a", "0,17", "1.5"])
def test_extra_networks_out_of_bounds(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="comma-separated"):
        extra_counts(value)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="braidctl")
    bench.add_parser(parser.add_subparsers())
    return parser.parse_args(["bench", "--conflist", __file__, *argv])


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--extra-networks", "0,2"), "several --extra-networks need --mode compare"),
        (("--mode", "thick", "--multus", "/bin/true"), "--multus needs --mode compare"),
        (("--mode", "compare", "--burst", "5"), "--mode compare runs no burst"),
    ],
)
def test_what_only_compare_mode_takes(argv: tuple[str, ...], said: str) -> None:
    with pytest.raises(CniError, match=said):
        plan_of(parse(*argv), lambda _: [])


@pytest.mark.parametrize(
    ("argv", "counts"),
    [((), (0,)), (("--mode", "compare"), (0, 2)), (("--extra-networks", "1"), (1,))],
)
def test_the_pod_sizes_by_default(argv: tuple[str, ...], counts: tuple[int, ...]) -> None:
    """Compare mode measures 1 and 3 attachments unless told otherwise."""

    assert pod_sizes(parse(*argv)) == counts


def test_multus_gets_the_pods_networks_as_its_delegates_and_no_kubeconfig(tmp_path: Path) -> None:
    """Without a Kubernetes client Multus attaches every entry of ``delegates`` in order
    (``eth0``, ``net1``, ...), as braid attaches the cluster network and the pod's NADs."""
    cluster = {"cniVersion": "1.0.0", "name": "c", "plugins": [{"type": "bridge"}]}
    extra = {"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "macvlan"}]}
    world = World(tmp_path, "/run/netns/h", "/usr/lib/cni", cluster, [("x", extra)] * 2)
    conf = multus_conf(world, 2)
    assert conf["delegates"] == [cluster, extra, extra]
    assert multus_conf(world, 0)["delegates"] == [cluster]
    assert (conf["type"], conf["cniVersion"], conf["binDir"]) == ("multus", "1.0.0", "/usr/lib/cni")
    assert conf["cniDir"] == str(tmp_path / "multus")  # its scratch files stay in the run's
    assert "kubeconfig" not in conf
    assert "clusterNetwork" not in conf
