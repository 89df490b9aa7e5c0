"""What a run reports: one JSON-ready document (milliseconds, KiB, the machine's load before and
after, the plan) and the table people read."""

from __future__ import annotations

from typing import Any

from braid.bench.compare_report import compare_document, compare_lines
from braid.bench.network import plugin_types
from braid.bench.run import BenchOutcome, BenchPlan
from braid.bench.trace import trace_lines

VERBS = ("VERSION", "ADD", "CHECK", "DEL")


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def document(
    plan: BenchPlan,
    outcome: BenchOutcome,
    *,
    version: str,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> dict[str, Any]:
    verbs = {
        verb: {
            "rounds": fig.rounds,
            "direct_median_ms": _ms(fig.direct_median),
            "braid_median_ms": _ms(fig.measured_median),
            "overhead_median_ms": _ms(fig.overhead_median),
            "overhead_p90_ms": _ms(fig.overhead_p90),
            "overhead_median_95_ms": [_ms(fig.overhead_low), _ms(fig.overhead_high)],
        }
        for verb in VERBS
        if (fig := outcome.figures.get(verb)) is not None
    }
    burst = None
    if outcome.burst is not None:
        b = outcome.burst
        burst = {
            "pods": b.pods,
            "parallel": b.parallel,
            "add_seconds": round(b.add_seconds, 3),
            "add_pods_per_second": round(b.pods / b.add_seconds, 2),
            "del_seconds": round(b.del_seconds, 3),
            "del_pods_per_second": round(b.pods / b.del_seconds, 2),
        }
        if b.direct_add_seconds is not None and b.direct_del_seconds is not None:
            burst["direct_add_seconds"] = round(b.direct_add_seconds, 3)
            burst["direct_add_pods_per_second"] = round(b.pods / b.direct_add_seconds, 2)
            burst["direct_del_seconds"] = round(b.direct_del_seconds, 3)
            burst["direct_del_pods_per_second"] = round(b.pods / b.direct_del_seconds, 2)
    plugins = plugin_types(plan.network)
    return {
        "braid_version": version,
        "run_id": outcome.run_id,
        "mode": plan.mode,
        "network": {
            "name": plan.network.get("name"),
            "cniVersion": plan.network.get("cniVersion"),
            "plugins": plugins,
            "source": plan.source,
        },
        "extra_networks": list(plan.extra_counts) if plan.extra_counts else plan.extra_networks,
        "rounds": plan.rounds,
        "phase_spread_ms": _ms(plan.spread),
        "cni_path": plan.bin_dir,
        "executable": str(plan.executable),
        "machine": {
            "cpus": _cpus(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
        },
        "verbs": verbs,
        "compare": compare_document(outcome.compare) if outcome.compare is not None else None,
        "burst": burst,
        "daemon_memory_kib": dict(outcome.memory_kib) or None,
        "trace": outcome.trace,
        "teardown_failures": list(outcome.teardown_failures),
    }


def _cpus() -> int:
    import os  # noqa: PLC0415

    return len(os.sched_getaffinity(0))


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def _head(doc: dict[str, Any]) -> list[str]:
    net = doc["network"]
    machine = doc["machine"]
    load = " ".join(f"{x:.2f}" for x in machine["load_average_before"])
    after = " ".join(f"{x:.2f}" for x in machine["load_average_after"])
    extra = doc["extra_networks"]
    extra_text = ",".join(str(n) for n in extra) if isinstance(extra, list) else str(extra)
    return [
        f"braid {doc['braid_version']} {doc['mode']} mode: network {net['name']} "
        f"({'+'.join(str(p) for p in net['plugins'])}, cniVersion {net['cniVersion']}), "
        f"+{extra_text} extra network(s)",
        f"{doc['rounds']} paired rounds, random pause up to {doc['phase_spread_ms']:g} ms; "
        f"{machine['cpus']} CPUs, load average {load} before, {after} after",
    ]


def _verb_lines(doc: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"{'verb':<8} {'direct median':>14} {'braid median':>13} "
        f"{'overhead median':>16} {'95% interval':>17} {'overhead p90':>13}   (ms)",
    ]
    for verb in VERBS:
        fig = doc["verbs"].get(verb)
        if fig is None:
            continue
        low, high = fig["overhead_median_95_ms"]
        interval = f"{low:+.2f}..{high:+.2f}"
        lines.append(
            f"{verb:<8} {fig['direct_median_ms']:>14.2f} {fig['braid_median_ms']:>13.2f} "
            f"{fig['overhead_median_ms']:>+16.2f} {interval:>17} {fig['overhead_p90_ms']:>+13.2f}"
        )
    return lines


def text(doc: dict[str, Any]) -> str:
    lines = _head(doc)
    compared = doc.get("compare")
    lines += compare_lines(compared) if compared else _verb_lines(doc)
    burst = doc["burst"]
    if burst is not None:
        lines += [
            "",
            f"burst of {burst['pods']} pods, {burst['parallel']} at a time: "
            f"ADD {burst['add_seconds']:.2f} s ({burst['add_pods_per_second']:.1f} pods/s), "
            f"DEL {burst['del_seconds']:.2f} s ({burst['del_pods_per_second']:.1f} pods/s)",
        ]
        if "direct_add_seconds" in burst:
            lines.append(
                f"the same, delegates directly: ADD {burst['direct_add_seconds']:.2f} s "
                f"({burst['direct_add_pods_per_second']:.1f} pods/s), "
                f"DEL {burst['direct_del_seconds']:.2f} s "
                f"({burst['direct_del_pods_per_second']:.1f} pods/s)"
            )
    lines += trace_lines(doc.get("trace"))
    memory = doc["daemon_memory_kib"]
    if memory:
        parts = [f"{key} {_mib(value)}" for key, value in memory.items()]
        lines.append("daemon resident size: " + ", ".join(parts))
    for failure in doc["teardown_failures"]:
        lines.append(f"warning: a DEL at the end failed: {failure}")
    return "\n".join(lines) + "\n"
