"""braid's configuration as one flat document: the call's own keys, declared here, and every
layered key, declared in its view (``braid.config.layers``) and added to the document's struct
from the key table (``braid.config.keys``). Loading and checking it: ``braid.config.schema``.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import msgspec

from braid.config.keys import LAYERED, Key, build
from braid.config.layers import DaemonConfig, EngineConfig, KubernetesConfig, LoggingConfig


class _CallKeys(msgspec.Struct, frozen=True, dict=True, rename="camel", omit_defaults=True):
    """The keys of the call itself (the CNI network and what the runtime passes with it) and
    the network choice (read by resolution, no one layer's setting); every other key is
    declared once in a view of ``braid.config.layers`` and read through it (``engine``,
    ``daemon``, ``kubernetes``, ``logging``).

    Frozen, and each view is built on its first read and kept in the instance's ``__dict__``
    (``dict=True``; no field, so never encoded or compared): every read of one configuration
    returns the same view, and a changed configuration is a new instance
    (``msgspec.structs.replace``, by flat attribute: ``braid.config.keys``) with views of its
    own.
    """

    cni_version: str = ""
    name: str = ""
    type: str = ""
    cluster_network: str = ""
    default_networks: list[str] = msgspec.field(default_factory=list)
    delegates: list[msgspec.Raw] = msgspec.field(default_factory=list)
    capabilities: dict[str, bool] = msgspec.field(default_factory=dict)
    runtime_config: dict[str, Any] = msgspec.field(default_factory=dict)
    args: dict[str, Any] | None = None
    prev_result: Any = None

    @cached_property
    def engine(self) -> EngineConfig:
        """What the engine reads: directories, bounds, policy, devices."""
        return cast("EngineConfig", build(EngineConfig, self))

    @cached_property
    def daemon(self) -> DaemonConfig:
        """What the daemon and the shim read: socket, queue, concurrency, metrics, hot-plug."""
        return cast("DaemonConfig", build(DaemonConfig, self))

    @cached_property
    def kubernetes(self) -> KubernetesConfig:
        """What the Kubernetes store reads: kubeconfig, status policy, namespaces."""
        return cast("KubernetesConfig", build(KubernetesConfig, self))

    @cached_property
    def logging(self) -> LoggingConfig:
        """Where braid's log goes: file, level, stderr, rotation options."""
        return cast("LoggingConfig", build(LoggingConfig, self))


def _flat_field(key: Key) -> tuple[str, Any, Any]:
    if key.default_factory is not msgspec.NODEFAULT:
        return (
            key.attribute,
            key.type,
            msgspec.field(default_factory=key.default_factory, name=key.key),
        )
    return (key.attribute, key.type, msgspec.field(default=key.default, name=key.key))


_CALL_KEYS = set(_CallKeys.__struct_encode_fields__)
if _CALL_KEYS & {key.key for key in LAYERED}:  # pragma: no cover - a declaration error
    raise TypeError("a view of braid.config.layers declares one of the call's own keys")


# The flat document: the call's keys and, by its snake_case attribute, every layered key. Typed
# as the call's keys alone, so that a layered key is read through its view (mypy says so).
if TYPE_CHECKING:

    class BraidConfig(_CallKeys, frozen=True, dict=True):
        """braid's configuration (the call's keys and the views)."""

else:
    BraidConfig = msgspec.defstruct(
        "BraidConfig",
        [_flat_field(key) for key in LAYERED],
        bases=(_CallKeys,),
        module=__name__,
        frozen=True,
        dict=True,
        omit_defaults=True,
    )

# Read from the struct's own attributes (``msgspec.structs.fields`` evaluates every annotation
# again: a millisecond of every braid-thin call).
KNOWN_KEYS = frozenset(BraidConfig.__struct_encode_fields__)
# Each key's attribute in the flat document (for ``msgspec.structs.replace``).
ATTRIBUTES = dict(
    zip(BraidConfig.__struct_encode_fields__, BraidConfig.__struct_fields__, strict=True)
)
