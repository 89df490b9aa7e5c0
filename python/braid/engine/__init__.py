"""braid.engine: executes attachment plans (ADD, DEL, CHECK, GC, STATUS) as a delegating plugin.

``Engine(...).run(env, stdin)`` is the whole plugin: the CNI environment and stdin in, the one
JSON document for stdout and the exit status out. The daemon builds its ``Engine`` once,
``braid-thin`` one per call; ``run_cni(env, stdin)`` is a call by an engine with every default.

The names below are imported from their modules when first used (``braid.exports``), so
importing one module of the engine does not import the others. DEL's ``detach`` is
``braid.engine.detach.detach``: a lazy package cannot also name a function after a submodule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from braid.exports import lazy_exports

if TYPE_CHECKING:
    from braid.engine.attach import AddOutcome, add
    from braid.engine.context import EngineContext
    from braid.engine.entry import Engine, run_cni
    from braid.engine.maintenance import check, gc, status
    from braid.engine.record import AttachmentRecord, RecordStore
    from braid.engine.request import CniRequest, read_request
    from braid.engine.teardown import delete

__all__ = [
    "AddOutcome",
    "AttachmentRecord",
    "CniRequest",
    "Engine",
    "EngineContext",
    "RecordStore",
    "add",
    "check",
    "delete",
    "gc",
    "read_request",
    "run_cni",
    "status",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "AddOutcome": "braid.engine.attach",
        "add": "braid.engine.attach",
        "EngineContext": "braid.engine.context",
        "Engine": "braid.engine.entry",
        "run_cni": "braid.engine.entry",
        "check": "braid.engine.maintenance",
        "gc": "braid.engine.maintenance",
        "status": "braid.engine.maintenance",
        "AttachmentRecord": "braid.engine.record",
        "RecordStore": "braid.engine.record",
        "CniRequest": "braid.engine.request",
        "read_request": "braid.engine.request",
        "delete": "braid.engine.teardown",
    },
)
