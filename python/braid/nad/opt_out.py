"""A pod's opt-out of ``defaultNetworks``: the annotation ``braid-cni.io/default-networks``.

``none`` drops every network of ``defaultNetworks`` (with inline ``delegates``: every delegate
after the first); a comma-separated list keeps only the entries it names, each written as in
``defaultNetworks`` (or, with inline ``delegates``, a delegate's network name). The cluster
default network is never dropped. A pod may opt out only where the operator sets the braid
configuration key ``allowDefaultNetworksOptOut``; elsewhere the annotation is refused with
error 7 rather than ignored, so the pod's owner learns why (``docs/annotations.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

from braid.errors import INVALID_CONFIG, CniError

DEFAULT_NETWORKS_ANNOTATION = "braid-cni.io/default-networks"
NONE = "none"
_SHOWN = 8  # configured entries a message lists at most


def _fail(problem: str) -> CniError:
    return CniError(INVALID_CONFIG, f"invalid annotation {DEFAULT_NETWORKS_ANNOTATION}: {problem}")


def parse_opt_out(value: str, *, max_bytes: int) -> frozenset[str] | None:
    """The entries of ``defaultNetworks`` the pod keeps: None when the annotation is absent or
    blank (all of them), empty for ``none``. Syntax only; ``apply_opt_out`` checks the rest."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _fail(
            f"{size} bytes, more than the {max_bytes} braid allows (braid configuration key "
            "`maxAnnotationBytes`)"
        )
    if not value.strip():
        return None
    items = [item.strip() for item in value.split(",")]
    if any(not item or not item.isprintable() for item in items):
        raise _fail(
            f"{value!r}: expected {NONE!r} or a comma-separated list of defaultNetworks entries "
            "to keep, without empty or unprintable entries"
        )
    if NONE in items:
        if len(items) > 1:
            raise _fail(f"{value!r}: {NONE!r} cannot be combined with entries to keep")
        return frozenset()
    return frozenset(items)


def _listed(configured: Sequence[str]) -> str:
    shown = ", ".join(repr(c) for c in configured[:_SHOWN])
    more = f" and {len(configured) - _SHOWN} more" if len(configured) > _SHOWN else ""
    return f"({shown}{more})" if configured else "(none is configured)"


def apply_opt_out(keep: frozenset[str] | None, configured: Sequence[str], *, allowed: bool) -> None:
    """Refuses an opt-out the operator does not allow, or one naming an entry that is not
    configured (a typo would otherwise drop a network silently)."""
    if keep is None:
        return
    if not allowed:
        raise _fail(
            "this cluster does not let pods opt out of its defaultNetworks: remove the "
            "annotation, or have the operator set the braid configuration key "
            "`allowDefaultNetworksOptOut` to true"
        )
    unknown = sorted(keep - set(configured))
    if unknown:
        raise _fail(
            f"keeps {unknown[0]!r}, which is not an entry of the braid configuration's "
            f"defaultNetworks {_listed(configured)}"
        )
