"""``args.cni`` keys a NAD pins against the pods that select it.

A selection's ``cni-args`` are merged into each delegate's ``args.cni`` over the NAD's own
values (Multus' rule), and so are its ``ips``, ``mac`` and ``infiniband-guid`` requests. A NAD
whose owner wants some of its ``args.cni`` keys to hold whatever the pod says lists them in its
annotation ``braid-cni.io/pinned-cni-args``: key names separated by commas, or ``*`` for every
key any plugin of its configuration sets in ``args.cni``. A selection that would set a pinned
key fails with code 7 (``docs/annotations.md``). An annotation on the NAD, not a key of its
configuration, so that the delegates get the configuration as it is.
"""

from __future__ import annotations

from typing import Any

import msgspec

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import Selection
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.netconf import DelegateConfig

PINNED_ARGS_ANNOTATION = "braid-cni.io/pinned-cni-args"
ALL_KEYS = "*"


def _args_cni_keys(plugin: Any) -> set[str]:
    args = plugin.get("args") if isinstance(plugin, dict) else None
    cni = args.get("cni") if isinstance(args, dict) else None
    return set(cni) if isinstance(cni, dict) else set()


def _configured_keys(delegate: DelegateConfig) -> set[str]:
    """Every key some plugin of the configuration sets in its ``args.cni``."""
    doc = msgspec.json.decode(delegate.data)  # already checked by delegate_from_bytes
    plugins = doc.get("plugins") if delegate.is_list else [doc]
    found: set[str] = set()
    for plugin in plugins if isinstance(plugins, list) else []:
        found |= _args_cni_keys(plugin)
    return found


def pinned_keys(nad: NetworkAttachmentDefinition, delegate: DelegateConfig) -> set[str]:
    """The ``args.cni`` keys ``nad`` pins (its configuration resolved as ``delegate``)."""
    value = nad.annotations.get(PINNED_ARGS_ANNOTATION, "")
    names = {part.strip() for part in value.split(",")} - {""}
    if ALL_KEYS in names:
        names = (names - {ALL_KEYS}) | _configured_keys(delegate)
    return names


def check_pins(
    selection: Selection, nad: NetworkAttachmentDefinition, delegate: DelegateConfig, label: str
) -> None:
    """Refuses (code 7) a selection, named ``label`` in messages, that would set an
    ``args.cni`` key ``nad`` pins."""
    requested = selection.args_cni()
    if not requested or PINNED_ARGS_ANNOTATION not in nad.annotations:
        return
    pinned = pinned_keys(nad, delegate)
    for key in requested:
        if key in pinned:
            raise CniError(
                INVALID_CONFIG,
                f"{label}: key {selection.args_cni_source(key)!r} sets args.cni {key!r}, which "
                f"NetworkAttachmentDefinition {nad.namespace}/{nad.name} pins (its annotation "
                f"{PINNED_ARGS_ANNOTATION}): remove {key!r} from the pod's annotation, or ask "
                "the NAD's owner to unpin it",
            )
