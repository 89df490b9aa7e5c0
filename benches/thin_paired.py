"""The paired rounds of the thin-mode benchmark (`test_bench_thin_overhead.py`): one pod's
VERSION, ADD, CHECK and DEL through `braid-thin` (braid in-process, no daemon) and the same
calls of its delegates executed directly, in the same world as the thick-mode benchmarks
(`thick_world`: bridge + host-local, the cluster network and `extra` NADs from files).

Each round runs the two sides in a random order (seeded), each timed call after an untimed pause
of random length (`OverheadRecord.timed`, which says why); the overhead is the median (and the
90th percentile) of the per-round differences.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overhead_record import OverheadRecord
from runtime_exec import execute
from thick_direct import DirectPod
from thick_world import World, cni_env

VERBS = ("VERSION", "ADD", "CHECK", "DEL")


def thin_path() -> Path:
    """`braid-thin` as installed beside the running interpreter (`BRAID_THIN` names another,
    for instance one installed from the wheel into a virtualenv of its own)."""
    path = Path(os.environ.get("BRAID_THIN") or Path(sys.executable).parent / "braid-thin")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no braid-thin executable at {path}")
    return path


def _run(path: str, env: dict[str, str], stdin: bytes) -> bytes:
    code, stdout, stderr = execute(path, env, stdin)
    if code != 0:
        raise RuntimeError(f"{path} {env['CNI_COMMAND']} failed ({code}): {stdout!r} {stderr!r}")
    return stdout


@dataclass
class DirectThinPod(DirectPod):
    """The delegates alone: `DirectPod`'s ADD and DEL, plus CHECK of every delegate with its
    ADD result, and VERSION of the cluster network's plugin."""

    def check(self) -> None:
        for ifname, _, network in self.networks():
            self._call("CHECK", ifname, network)

    def version(self) -> None:
        plugin = self.world.cluster_list()["plugins"][0]["type"]
        env = cni_env("VERSION", "", "", bin_dir=self.world.bin_dir)
        _run(f"{self.world.bin_dir}/{plugin}", env, b'{"cniVersion":"1.0.0"}')


@dataclass
class ThinPod:
    """The same pod through `braid-thin`, executed as a runtime executes a CNI plugin."""

    world: World
    thin: Path
    extra: int
    container_id: str
    netns: str
    result: dict[str, Any] = field(default_factory=dict)

    def _call(self, command: str, conf: bytes) -> bytes:
        env = cni_env(command, self.container_id, self.netns, bin_dir=self.world.bin_dir)
        return _run(str(self.thin), env, conf)

    def add(self) -> None:
        self.result = json.loads(self._call("ADD", self.world.braid_conf(self.extra)))
        if not self.result.get("ips"):
            raise RuntimeError(f"braid-thin ADD answered no address: {self.result}")

    def check(self) -> None:
        conf = json.loads(self.world.braid_conf(self.extra))
        conf["prevResult"] = self.result
        if self._call("CHECK", json.dumps(conf).encode()).strip():
            raise RuntimeError("braid-thin CHECK printed something")

    def delete(self) -> None:
        if self._call("DEL", self.world.braid_conf(self.extra)).strip():
            raise RuntimeError("braid-thin DEL printed something")
        self.result = {}

    def version(self) -> None:
        env = cni_env("VERSION", "", "", bin_dir=self.world.bin_dir)
        doc = json.loads(_run(str(self.thin), env, b'{"cniVersion":"1.0.0"}'))
        if "1.0.0" not in doc["supportedVersions"]:
            raise RuntimeError(f"braid-thin VERSION: {doc}")


@dataclass
class ThinRounds:
    """Paired rounds of both sides; `record` keeps the samples (`OverheadRecord.samples`)."""

    direct: DirectThinPod
    thin: ThinPod
    record: OverheadRecord
    order: random.Random = field(default_factory=lambda: random.Random(19))  # noqa: S311

    def round(self) -> None:
        sides: list[tuple[str, DirectThinPod | ThinPod]] = [
            ("direct", self.direct),
            (self.record.measured, self.thin),
        ]
        self.order.shuffle(sides)
        label = f"+{self.direct.extra} extra network(s)"
        for side, pod in sides:
            for verb in VERBS:
                call = {
                    "VERSION": pod.version,
                    "ADD": pod.add,
                    "CHECK": pod.check,
                    "DEL": pod.delete,
                }[verb]
                self.record.timed(f"{verb} {label}", side, call)


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def summary_lines(record: OverheadRecord) -> list[str]:
    """Per verb: both sides' medians, and the median and p90 of the paired differences."""
    lines = []
    for op in sorted({op for op, _ in record.samples}):
        direct = record.samples.get((op, "direct"), [])
        thin = record.samples.get((op, record.measured), [])
        if len(direct) < 2 or len(direct) != len(thin):
            continue
        diffs = [t - d for d, t in zip(direct, thin, strict=True)]
        lines.append(
            f"{op:<28} n={len(direct):<4} direct {statistics.median(direct) * 1e3:6.2f}"
            f"  {record.measured} {statistics.median(thin) * 1e3:6.2f}"
            f"  overhead median {statistics.median(diffs) * 1e3:+6.2f}"
            f"  p90 {p90(diffs) * 1e3:+6.2f}"
        )
    return lines
