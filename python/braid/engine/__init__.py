"""braid.engine: executes attachment plans (ADD, DEL, CHECK, GC, STATUS) as a delegating plugin.

``run_cni(env, stdin)`` is the whole plugin: the CNI environment and stdin in, the one JSON
document for stdout and the exit status out. ``braid-thin`` and the daemon both call it.
"""

from __future__ import annotations

from braid.engine.attach import AddOutcome, add
from braid.engine.context import EngineContext
from braid.engine.detach import detach
from braid.engine.entry import run_cni
from braid.engine.maintenance import check, gc, status
from braid.engine.record import AttachmentRecord, RecordStore
from braid.engine.request import CniRequest, read_request
from braid.engine.teardown import delete

__all__ = [
    "AddOutcome",
    "AttachmentRecord",
    "CniRequest",
    "EngineContext",
    "RecordStore",
    "add",
    "check",
    "delete",
    "detach",
    "gc",
    "read_request",
    "run_cni",
    "status",
]
