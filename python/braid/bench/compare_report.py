"""What ``--mode compare`` reports: per pod size (attachments) and side, each verb's median and
the median of the per-round differences against the delegates executed directly, with its 95 %
interval (JSON, milliseconds), and the tables people read (VERSION absolute: a side's own
answer, not a delegate's, so a difference would say little)."""

from __future__ import annotations

from typing import Any

from braid.bench.compare import SIDE_NAMES, CompareFigures

VERBS = ("VERSION", "ADD", "CHECK", "DEL")
CELL = 26  # "+126.15 (+84.28..+166.75)" and a space


def _width(verb: str) -> int:
    return 9 if verb == "VERSION" else CELL


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def compare_document(figures: CompareFigures) -> dict[str, Any]:
    """Attachments -> "direct" -> verb -> median; attachments -> side -> verb -> figures."""
    found: dict[str, Any] = {}
    for attachments, sides in figures.items():
        size: dict[str, Any] = {}
        for side, by_verb in sides.items():
            ordered = [(verb, by_verb[verb]) for verb in VERBS if verb in by_verb]
            size.setdefault("direct", {verb: _ms(f.direct_median) for verb, f in ordered})
            size[side] = {
                verb: {
                    "median_ms": _ms(f.measured_median),
                    "overhead_median_ms": _ms(f.overhead_median),
                    "overhead_median_95_ms": [_ms(f.overhead_low), _ms(f.overhead_high)],
                    "overhead_p90_ms": _ms(f.overhead_p90),
                }
                for verb, f in ordered
            }
        found[str(attachments)] = size
    return found


def _cell(verb: str, figures: dict[str, Any]) -> str:
    if verb == "VERSION":
        return f"{figures['median_ms']:.2f}"
    low, high = figures["overhead_median_95_ms"]
    return f"{figures['overhead_median_ms']:+.2f} ({low:+.2f}..{high:+.2f})"


def compare_lines(compare: dict[str, Any]) -> list[str]:
    """A table per pod size: a row per side, a column per verb."""
    lines: list[str] = []
    for attachments, size in compare.items():
        verbs = [verb for verb in VERBS if verb in size["direct"]]
        plural = "" if attachments == "1" else "s"
        lines += [
            "",
            f"{attachments} attachment{plural} (ms): overhead against the delegates directly, "
            "median (95% interval); VERSION: each side's median",
            f"{'side':<12}" + "".join(f" {verb:>{_width(verb)}}" for verb in verbs),
            f"{'directly':<12}" + "".join(f" {size['direct'][v]:>{_width(v)}.2f}" for v in verbs),
        ]
        for side, name in SIDE_NAMES.items():
            if side in size:
                cells = "".join(f" {_cell(v, size[side][v]):>{_width(v)}}" for v in verbs)
                lines.append(f"{name:<12}{cells}")
    return lines
