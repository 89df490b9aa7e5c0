"""What one engine operation works with: braid's configuration, the store, the runtime."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from braid.cni import (
    Runtime,
    RuntimeRequest,
)
from braid.cni.exec import Executor
from braid.cni.locks import LockDirectory
from braid.engine.record import (
    RECORD_KIND,
    RECORD_VERSION,
    AttachmentEntry,
    AttachmentRecord,
    RecordStore,
)
from braid.engine.request import CniRequest
from braid.nad.config import BraidConfig
from braid.nad.plan import AttachmentPlan, empty_prev_result
from braid.nad.resolve import PodRef
from braid.nad.store import Store

log = logging.getLogger("braid.engine")


class StatusPublisher(Protocol):
    """Where a successful ADD's network-status goes (the Kubernetes store's pod annotation).

    Called once per ADD, after every attachment succeeded, with the pod and the network-status
    list (JSON bytes). Raising ``CniError`` fails the ADD (it is rolled back); a publisher
    that may retry later returns instead.
    """

    def publish(self, pod: PodRef, network_status: bytes) -> None: ...


@dataclass
class EngineContext:
    """braid's configuration plus the pieces every verb needs.

    ``store`` is None when braid runs without one (DEL must still work then);
    ``executor`` is the delegate executor seam (``None``: real processes);
    ``publisher`` receives the network-status of each successful ADD (``None``: kept in the
    attachment record only).
    """

    config: BraidConfig
    store: Store | None = None
    executor: Executor | None = None
    publisher: StatusPublisher | None = None
    extra_plugin_dirs: list[str] = field(default_factory=list)

    @property
    def cni_dir(self) -> Path:
        return Path(self.config.cni_dir)

    def records(self) -> RecordStore:
        return RecordStore(self.cni_dir)

    def locks(self) -> LockDirectory:
        return LockDirectory(self.cni_dir / "engine")

    def runtime(self, request: CniRequest) -> Runtime:
        """A runtime over ``binDir`` then the runtime's ``CNI_PATH``, for calls made under the
        engine's own locks (``locks()``: the container's stripe for ADD, DEL and CHECK, the GC
        lock for GC, held for the whole operation), so it takes no lock file of its own; and
        without a result cache: the attachment record holds every result and the engine hands
        it back as ``prev_result`` to DEL and CHECK."""
        dirs = [self.config.bin_dir, *request.plugin_dirs, *self.extra_plugin_dirs]
        unique = list(dict.fromkeys(d for d in dirs if d))
        return Runtime(
            unique,
            cache_dir=str(self.cni_dir),
            executor=self.executor,
            timeout=self.config.plugin_timeout,
            result_cache=False,
            own_locks=False,
        )


def pod_of(request: CniRequest) -> PodRef:
    """The pod from ``K8S_POD_*``; podman sends only ``K8S_POD_NAME`` (namespace: default)."""
    return PodRef(
        namespace=request.arg("K8S_POD_NAMESPACE") or "default",
        name=request.arg("K8S_POD_NAME"),
        uid=request.arg("K8S_POD_UID"),
    )


def runtime_request(record: AttachmentRecord, entry: AttachmentEntry) -> RuntimeRequest:
    """The runtime request of one attachment, rebuilt from the record alone (the auxiliary
    chain's with the empty initial ``prevResult`` its ADD starts from)."""
    initial = None
    if entry.auxiliary_chain:
        initial = empty_prev_result(entry.attachment().network_list())
    return RuntimeRequest(
        container_id=record.container_id,
        netns=record.netns,
        ifname=entry.ifname,
        cni_args=list(record.cni_args),
        capability_args=dict(entry.capability_args),
        args_cni=dict(entry.args_cni) or None,
        initial_prev_result=initial,
    )


def new_record(ctx: EngineContext, request: CniRequest, plan: AttachmentPlan) -> AttachmentRecord:
    return AttachmentRecord(
        container_id=request.container_id,
        netns=request.netns,
        kind=RECORD_KIND,
        version=RECORD_VERSION,
        cni_version=ctx.config.cni_version,
        cni_args=list(request.cni_args),
        plugin_dirs=list(request.plugin_dirs),
        pod_namespace=plan.pod_namespace,
        pod_name=plan.pod_name,
        pod_uid=plan.pod_uid,
        attachments=[AttachmentEntry.of(a) for a in plan.attachments],
    )


class NoStore:
    """The store of a braid that has none: knows no NAD and no pod."""

    def get_nad(self, namespace: str, name: str) -> None:
        return None

    def get_pod(self, namespace: str, name: str, uid: str) -> None:
        return None
