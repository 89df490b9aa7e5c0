"""The multi-node run's table (``scale_fleet``): one row a kind of daemon, then the ratios of
Multus thick's figures to braid's."""

from __future__ import annotations

from typing import Any


def reads(requests: dict[str, float]) -> float:
    return round(sum(v for k, v in requests.items() if k.split()[0] in ("GET", "LIST")), 2)


def by_verb(failures: dict[str, int]) -> str:
    return ", ".join(f"{verb} {n}" for verb, n in sorted(failures.items())) or "none"


def restart_failures(row: dict[str, Any]) -> int | None:
    restart = row.get("restart")
    return None if restart is None else sum(restart["churn"]["failures"].values())


ROWS = (
    ("in sync after start, s", lambda r: r["start"]["in_sync_seconds"]),
    ("API server peak at start, MiB", lambda r: r["start"]["apiserver_peak_rss_mib"]),
    ("requests at start, per s", lambda r: r["start"]["requests_per_second"]),
    ("daemon RSS at rest, MiB (max)", lambda r: max(d["rss_mib"] for d in r["rest"]["daemons"])),
    ("daemon threads at rest", lambda r: max(d["threads"] for d in r["rest"]["daemons"])),
    ("connections per daemon", lambda r: max(d["connections"] for d in r["rest"]["daemons"])),
    ("requests per pod lifecycle", lambda r: round(sum(r["lifecycle"]["requests"].values()), 2)),
    ("reads per pod lifecycle", lambda r: reads(r["lifecycle"]["requests"])),
    ("churn: requested rate a node, /s", lambda r: r["churn"]["requested_rate_per_node"]),
    ("churn: achieved rate a node, /s", lambda r: r["churn"]["achieved_rate_per_node"]),
    ("churn: start late by, p99 ms", lambda r: r["churn"]["start_lag_p99_ms"]),
    ("churn lifecycles", lambda r: r["churn"]["lifecycles"]),
    ("churn failures", lambda r: sum(r["churn"]["failures"].values())),
    ("churn failures by verb", lambda r: by_verb(r["churn"]["failures"])),
    ("status latency p50, ms", lambda r: r["churn"]["status_p50_ms"]),
    ("status latency p99, ms", lambda r: r["churn"]["status_p99_ms"]),
    ("statuses never seen", lambda r: r["churn"]["lost_status"]),
    ("daemon peak RSS in churn, MiB", lambda r: r["churn"]["daemon_peak_rss_mib"]),
    ("restart: in sync after, s", lambda r: r["restart"]["in_sync_seconds"]),
    ("restart: API server steady MiB", lambda r: r["restart"]["apiserver_steady_rss_mib"]),
    ("restart: API server peak MiB", lambda r: r["restart"]["apiserver_peak_rss_mib"]),
    ("restart: failures during", restart_failures),
    ("restart: daemons still running", lambda r: r["restart"]["daemons_running"]),
    ("links left in pods' netns", lambda r: r["churn"]["leaked_links"]),
    ("files left in state dirs", lambda r: r["leftover_files"]),
    ("host-local leases left", lambda r: r["leftover_leases"]),
    ("load average after churn", lambda r: " ".join(map(str, r["churn"]["load_average"]))),
)


def cell(row: dict[str, Any] | None, get: Any) -> Any:
    if row is None:
        return "-"
    try:
        return get(row)
    except (KeyError, TypeError, ValueError):
        return "-"


def print_fleet(report: dict[str, Any]) -> None:
    kinds = [k for k in ("braid", "multus") if k in report]
    plan = report["plan"]
    print(f"{plan['nodes']} nodes; churn {plan['rate']} pods/s a node for {plan['seconds']} s")
    print("| | " + " | ".join(kinds) + (" | Multus / braid |" if len(kinds) == 2 else " |"))
    print("|---" * (len(kinds) + 1 + (len(kinds) == 2)) + "|")
    for title, get in ROWS:
        cells = [cell(report.get(k), get) for k in kinds]
        ratio = ""
        if len(kinds) == 2 and all(
            isinstance(c, int | float) and not isinstance(c, bool) for c in cells
        ):
            ratio = f" | {cells[1] / cells[0]:.2f}" if cells[0] else " | -"
        elif len(kinds) == 2:
            ratio = " | "
        print(f"| {title} | " + " | ".join(str(c) for c in cells) + ratio + " |")
    for kind in kinds:
        print(f"{kind} requests per pod lifecycle: {report[kind]['lifecycle']['requests']}")
    for row in report.get("growth", []):
        print(f"growth: {row}")
