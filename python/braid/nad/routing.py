"""Routing of a secondary attachment, opted into with ``braid-cni.io/routing``.

The same JSON object is read from two places: a key of the selection element in
``k8s.v1.cni.cncf.io/networks`` (the NPWG spec lets implementations add keys; braid's, like
every non-standard key, holds a dot) and an annotation of the NAD, a string holding the object
(an annotation, not a key of the NAD's configuration, so that the delegates get the
configuration as it is; ``braid.nad.pins`` does the same). Each key the selection sets wins over
the NAD's. ``sourceRouting``: a routing table of the interface's own and one rule per address
(``braid.engine.routing``); ``metric``: the priority of the attachment's main-table routes that
have a gateway. See docs/annotations.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from braid.errors import INVALID_CONFIG, CniError

ROUTING_KEY = "braid-cni.io/routing"
MAX_METRIC = 2**32 - 1
_MAX_TEXT = 1024  # the annotation's value: a small object


class BadRouting(ValueError):
    """A routing object of the wrong shape; the message says what is wrong."""


class Routing(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What an attachment asked of braid's routing; ``None`` where it said nothing."""

    source_routing: bool | None = None
    metric: int | None = None

    @property
    def wanted(self) -> bool:
        """Whether braid has anything to do for it."""
        return bool(self.source_routing) or self.metric is not None


def parse_routing(value: Any) -> Routing:
    """The routing object ``value`` (decoded JSON); ``BadRouting`` saying what is wrong."""
    if not isinstance(value, dict):
        raise BadRouting("expected an object with 'sourceRouting' and/or 'metric'")
    unknown = sorted(set(value) - {"sourceRouting", "metric"})
    if unknown:
        raise BadRouting(f"unknown key(s) {', '.join(map(repr, unknown))}")
    source = value.get("sourceRouting")
    if source is not None and not isinstance(source, bool):
        raise BadRouting(f"'sourceRouting': {source!r} is not true or false")
    metric = value.get("metric")
    if metric is not None and (
        isinstance(metric, bool) or not isinstance(metric, int) or not 0 <= metric <= MAX_METRIC
    ):
        raise BadRouting(f"'metric': {metric!r} is not an integer from 0 to {MAX_METRIC}")
    return Routing(source_routing=source, metric=metric)


def nad_routing(annotations: Mapping[str, str], source: str) -> Routing | None:
    """The routing the NAD's annotation asks for (``source`` names the NAD); code 7 when the
    annotation is not a valid routing object."""
    text = annotations.get(ROUTING_KEY)
    if text is None:
        return None
    try:
        return parse_routing(_decoded(text))
    except BadRouting as exc:
        raise CniError(
            INVALID_CONFIG,
            f"{source}: invalid annotation {ROUTING_KEY}: {exc}",
            'expected e.g. {"sourceRouting": true, "metric": 200} (docs/annotations.md)',
        ) from exc


def _decoded(text: str) -> Any:
    if len(text) > _MAX_TEXT:
        raise BadRouting(f"longer than {_MAX_TEXT} characters")
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise BadRouting(f"not JSON ({exc})") from exc


def merged_routing(nad: Routing | None, selection: Routing | None) -> Routing | None:
    """The attachment's routing: each key the selection sets over the NAD's; ``None`` when
    there is nothing to do."""
    low, high = nad or Routing(), selection or Routing()
    routing = Routing(
        source_routing=(
            high.source_routing if high.source_routing is not None else low.source_routing
        ),
        metric=high.metric if high.metric is not None else low.metric,
    )
    return routing if routing.wanted else None
