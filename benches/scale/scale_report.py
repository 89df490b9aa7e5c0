"""The scale driver's table, and its plot of the daemon's memory against the cluster's size
(when matplotlib is installed: it is not one of braid's dependencies)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

COLUMNS = (
    ("pods", "other pods"), ("nads", "NADs"), ("claims", "claims"),
    ("grow_seconds", "grown in s"), ("daemon_rss_mib", "daemon RSS MiB"),
    ("daemon_threads", "threads"), ("apiserver_rss_mib", "API server RSS MiB"),
    ("connections", "conns"), ("cached_nads", "NADs held"), ("cached_claims", "claims held"),
)  # fmt: skip


def print_table(report: dict[str, Any]) -> None:
    print(f"daemon ready in {report['ready_seconds']} s; start: {report['start_requests']}")
    print("| " + " | ".join(title for _, title in COLUMNS) + " | warm ADD+DEL requests |")
    print("|" + "---|" * (len(COLUMNS) + 1))
    for row in report["steps"]:
        cells = [f"{row[key]:,}" for key, _ in COLUMNS]
        requests = ", ".join(f"{k}: {v}" for k, v in row["warm_add_del_requests"].items())
        print("| " + " | ".join(cells) + f" | {requests} |")
    restart = report.get("restart")
    if restart:
        print(f"API server restart: {restart}")


def plot(report: dict[str, Any], path: Path) -> bool:
    """Writes the plot to ``path``; False without matplotlib."""
    try:  # optional, and heavy: imported only here
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    steps = report["steps"]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot([s["pods"] for s in steps], [s["daemon_rss_mib"] for s in steps], marker="o")
    axis.set_xlabel("pods on other nodes (NADs and claims grow with them)")
    axis.set_ylabel("daemon RSS (MiB)")
    axis.set_ylim(0, max(s["daemon_rss_mib"] for s in steps) * 1.25)
    axis.grid(visible=True)
    figure.tight_layout()
    figure.savefig(path)
    return True


if __name__ == "__main__":  # a plot of a report written before: scale_report.py JSON PNG
    import json
    import sys

    written = plot(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))
    sys.exit(0 if written else "matplotlib is not installed")


def in_workdir(prefix: str, body: Callable[[Path], T]) -> T:
    """`body` run in a fresh temporary directory, removed after whatever happens."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return body(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def write_report(report: dict[str, Any], out: Path | None, name: str) -> None:
    """Prints `report` as JSON and, given `out`, writes it there as `name`."""
    text = json.dumps(report, indent=2)
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text + "\n")
