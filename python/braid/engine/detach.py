"""DEL as it enters the engine: the cluster default network's readiness first (NPWG spec
section 6.1.2, ``braid.engine.readiness``), then the teardown (``braid.engine.teardown``).

The wait comes before the container's lock is taken and before the attachment record is read:
a DEL that gives up on it (code 11) has torn nothing down and left the record as it was, so the
runtime's retry finds everything still to do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from braid.engine.context import EngineContext
from braid.engine.devices import remove_device_info
from braid.engine.readiness import wait_ready
from braid.engine.request import CniRequest
from braid.engine.teardown import delete


def detach(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    answer: Callable[[bytes], None] | None = None,
) -> None:
    """Waits for the readiness indicator, then tears down every attachment (``delete``);
    once all are down, the device-information files braid wrote for them go too, before the
    runtime hears of the success (an early ``answer`` included)."""
    wait_ready(ctx.config.engine.dirs.readiness_indicator_file, operation="detaching")
    delete(
        ctx, request, capability_args, answer, done=lambda record: remove_device_info(ctx, record)
    )
