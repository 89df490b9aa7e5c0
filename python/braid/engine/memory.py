"""What the engine remembers from one call to the next, for a caller that makes many (the
daemon): nothing is kept for the whole process, so two callers in one process never share it.
"""

from __future__ import annotations

from braid.cni import VersionCache
from braid.cni.config import NetworkLists
from braid.cni.invoke import EnvironSnapshot
from braid.engine.early import FirstDelegates
from braid.nad.netconf import ConfDirLookups


class EngineMemory:
    """Made and kept by a caller (``Engine(memory=...)``; the daemon keeps its own): the
    first delegate of its recent ADDs (``FirstDelegates``, started early for the next), its
    ``confDir`` lookups (``ConfDirLookups``, the cluster network found without reading
    unchanged files), the plugins' VERSION answers (``VersionCache``, keyed by each binary's
    identity), the network lists it validated (``NetworkLists``, by their bytes) and the
    process environment plugins inherit (``EnvironSnapshot``). A call without one remembers
    nothing, not even across its own attachments. braid-thin makes one per call, its VERSION
    answers loaded from and saved to ``cniDir`` (``braid.cni.version_file``)."""

    def __init__(self) -> None:
        self.first_delegates = FirstDelegates()
        self.conf_dir = ConfDirLookups()
        self.versions = VersionCache()
        self.lists = NetworkLists()
        self.environ = EnvironSnapshot()
