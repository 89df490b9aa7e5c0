"""The session of one CNI call: the pieces outside braid's configuration that the engine works
with, built by the engine's caller.

``braid-thin`` opens the file store, or a Kubernetes session of its own, from each call's
configuration; the daemon hands out its cached stores and shared status writers. The engine
itself picks no store and imports no Kubernetes code: a caller that gives no session gets
the file store of the configuration's ``nadDir`` and ``podDir``, and no way to ask kubelet for
devices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from braid.config.schema import BraidConfig
from braid.engine.context import StatusPublisher
from braid.errors import CniError
from braid.nad.devices import KubeletReader
from braid.nad.plan import PodRef
from braid.nad.store import FileStore, LocalSession, Store


class Session(Protocol):
    """The store, the status publisher (None: the network-status stays in the attachment
    record), the kubelet reader for devices (None: a NAD with a resourceName is refused),
    what a failed ADD reports (``NoNetworkFound`` events for the NADs the store did not find),
    and ``close`` once the call is over."""

    @property
    def store(self) -> Store: ...

    @property
    def publisher(self) -> StatusPublisher | None: ...

    @property
    def kubelet(self) -> KubeletReader | None: ...

    def add_failed(self, pod: PodRef, error: CniError) -> None: ...

    def close(self) -> None: ...


# Given the call's configuration (after the caller's policy) and its environment: the session
# to run it with. Raises ``CniError`` when it cannot be opened (the call's answer).
OpenSession = Callable[[BraidConfig, Mapping[str, str]], Session]


def file_session(config: BraidConfig, env: Mapping[str, str]) -> Session:
    """The file store of ``nadDir`` and ``podDir``, read afresh; no kubelet reader."""
    dirs = config.engine.dirs
    return LocalSession(FileStore(dirs.nad_dir, dirs.pod_dir))


def store_sessions(store: Store, kubelet: KubeletReader | None = None) -> OpenSession:
    """Every call with ``store`` (and ``kubelet``), whatever its configuration says."""

    def open_session(config: BraidConfig, env: Mapping[str, str]) -> Session:
        return LocalSession(store, kubelet)

    return open_session
