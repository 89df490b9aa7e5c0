"""The cluster default network's readiness (NPWG spec section 6.1.2).

With ``readinessindicatorfile`` set, braid's configuration may be installed before the default
network is ready, so the spec asks that every pod network attachment and detachment block until
it is. ADD and DEL wait for the file to exist, as Multus does (a look every second, at most
45 seconds), and fail with code 11 when it does not appear, so the runtime tries again later.
Nothing has been attached or torn down when the wait fails.
"""

from __future__ import annotations

import os
import time

from braid._native import cni as native_cni
from braid.errors import TRY_AGAIN_LATER, CniError

# The shim's DEL waits alike (rust/braid-wire/src/readiness.rs holds the bound and the pace).
READINESS_TIMEOUT = native_cni.READINESS_TIMEOUT_SECONDS
READINESS_POLL = native_cni.READINESS_POLL_SECONDS


def wait_ready(path: str, *, operation: str) -> None:
    """Returns once ``path`` exists (at once without a path); raises code 11 when it still
    does not after ``READINESS_TIMEOUT`` seconds. ``operation`` ("attaching", "detaching")
    goes into the error's details."""
    if not path:
        return
    timeout = READINESS_TIMEOUT
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        left = deadline - time.monotonic()
        if left <= 0:
            raise CniError(
                TRY_AGAIN_LATER,
                f"the cluster default network is not ready: {path} does not exist",
                f"braid waited {timeout:g} s for the readiness indicator file "
                f"(readinessindicatorfile) before {operation} the pod's networks; try again later",
            )
        time.sleep(min(READINESS_POLL, left))
