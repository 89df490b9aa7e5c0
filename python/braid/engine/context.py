"""What one engine operation works with: braid's configuration, the store, the runtime."""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any, Protocol

import msgspec

from braid.cni import (
    Runtime,
    RuntimeRequest,
)
from braid.cni.cache import ResultCache
from braid.cni.config import NetworkLists
from braid.cni.exec import Executor, ProcessExecutor
from braid.cni.execution import Execution, ExecutionState
from braid.cni.hostroot import HostRoot
from braid.cni.locks import HeldByCaller, LockDirectory
from braid.cni.results import CallerResults
from braid.cni.search import search_dirs
from braid.config.schema import BraidConfig
from braid.engine.memory import EngineMemory
from braid.engine.phases import delegate_observer
from braid.engine.record import (
    RECORD_KIND,
    RECORD_VERSION,
    AttachmentEntry,
    AttachmentRecord,
    RecordStore,
    plan_entries,
)
from braid.engine.request import CniRequest
from braid.engine.spares import SpareFiles
from braid.nad.devices import KubeletReader
from braid.nad.plan import AttachmentPlan, PodRef, empty_prev_result
from braid.nad.store import Store
from braid.quietlog import QuietLogger

log = QuietLogger("braid.engine")


class StatusPublisher(Protocol):
    """Where a successful ADD's network-status goes (the Kubernetes store's pod annotation).

    Called once per ADD, after every attachment succeeded, with the pod and the network-status
    list (JSON bytes). Raising ``CniError`` fails the ADD (it is rolled back); a publisher
    that may retry later returns instead.
    """

    def publish(self, pod: PodRef, network_status: bytes) -> None: ...


class EngineContext(msgspec.Struct, dict=True):
    """braid's configuration plus the pieces every verb needs.

    ``store`` is None when braid runs without one (DEL must still work then);
    ``executor`` is the delegate executor seam (``None``: real processes, ``ProcessExecutor``);
    ``publisher`` receives the network-status of each successful ADD (``None``: kept in the
    attachment record only); ``spares``: the daemon's spare record files of this cniDir, for
    cheaper durable writes (``braid.engine.spares``; ``None``: every durable write is a new
    file, fsynced). ``root``: the node's root filesystem when braid sees it elsewhere (the
    daemon in its container): plugins are looked up and run inside it, and the paths of the
    request (``CNI_NETNS``) are opened through it (``local``); ``config`` then already names
    its files through it (``braid.nad.policy``). ``memory``: what the caller keeps
    from one call to the next (``braid.engine.memory``; ``None``: nothing is remembered).
    ``kubelet``: how devices are asked of kubelet's PodResources API, from the caller's
    session (``None``: a NAD with a resourceName is refused).
    """

    config: BraidConfig
    store: Store | None = None
    executor: Executor | None = None
    publisher: StatusPublisher | None = None
    extra_plugin_dirs: list[str] = msgspec.field(default_factory=list)
    spares: SpareFiles | None = None
    root: HostRoot | None = None
    memory: EngineMemory | None = None
    kubelet: KubeletReader | None = None

    def local(self, path: str) -> str:
        """Where this process opens the node's ``path`` (the path itself without a root)."""
        return path if self.root is None or not path else self.root.local(path)

    @cached_property
    def cni_dir(self) -> str:
        return self.config.engine.dirs.cni_dir

    def records(self) -> RecordStore:
        return self._records

    def locks(self) -> LockDirectory:
        return self._locks

    @cached_property
    def lists(self) -> NetworkLists:
        """The validated network lists of this call: the caller's memory's, else its own."""
        return NetworkLists() if self.memory is None else self.memory.lists

    @cached_property
    def _records(self) -> RecordStore:
        return RecordStore(self.cni_dir, spares=self.spares)

    @cached_property
    def _locks(self) -> LockDirectory:
        return LockDirectory(os.path.join(self.cni_dir, "engine"))

    def executor_or_default(self) -> Executor:
        """The executor this context's plugins run with (a ``ProcessExecutor`` in the node's
        root when none was given)."""
        return self.executor if self.executor is not None else self._default_executor

    @cached_property
    def _default_executor(self) -> ProcessExecutor:
        return ProcessExecutor(root=self.root)

    def runtime(self, request: CniRequest, *, executions: ExecutionState | None = None) -> Runtime:
        """A runtime over ``binDir`` then the runtime's ``CNI_PATH``, for calls made under the
        engine's own locks (``locks()``: the container's lock for ADD, DEL and CHECK, the GC
        lock for GC, held for the whole operation), so it takes no lock file of its own; and
        without a result cache: the attachment record holds every result and the engine hands
        it back as ``prev_result`` to DEL and CHECK. ``executions``: the request's (an
        ADD's hook before the first stdin byte and the plugins it expects; the caller declares
        and closes it); by default one that only reports each execution's time to the phase
        observer (``braid.engine.phases``). The plugins' VERSION answers are the caller's
        memory's (``EngineMemory.versions``), else this runtime's own."""
        dirs = search_dirs(
            self.config.engine.dirs.bin_dir, [*request.plugin_dirs, *self.extra_plugin_dirs]
        )
        return Runtime(
            dirs,
            cache_dir=self.config.engine.dirs.cni_dir,
            executor=self.executor_or_default(),
            timeout=self.config.engine.bounds.plugin_timeout,
            version_cache=None if self.memory is None else self.memory.versions,
            results=CallerResults(ResultCache(self.config.engine.dirs.cni_dir)),
            locks=HeldByCaller(),
            environ=None if self.memory is None else self.memory.environ,
            root=self.root,
            executions=(
                ExecutionState(Execution(observer=delegate_observer()))
                if executions is None
                else executions
            ),
        )


def pod_of(request: CniRequest) -> PodRef:
    """The pod from ``K8S_POD_*``; podman sends only ``K8S_POD_NAME`` (namespace: default)."""
    return PodRef(
        namespace=request.arg("K8S_POD_NAMESPACE") or "default",
        name=request.arg("K8S_POD_NAME"),
        uid=request.arg("K8S_POD_UID"),
    )


def runtime_request(
    record: AttachmentRecord, entry: AttachmentEntry, *, netns: str | None = None
) -> RuntimeRequest:
    """The runtime request of one attachment, rebuilt from the record alone (the auxiliary
    chain's with the empty initial ``prevResult`` its ADD starts from); ``netns`` instead of
    the record's when given (a DEL's own, possibly empty)."""
    initial = None
    if entry.auxiliary_chain:
        initial = empty_prev_result(entry.attachment().network_list())
    return RuntimeRequest(
        container_id=record.container_id,
        netns=record.netns if netns is None else netns,
        ifname=entry.ifname,
        cni_args=list(record.cni_args),
        capability_args=record.capabilities(entry),
        args_cni=dict(entry.args_cni) or None,
        initial_prev_result=initial,
    )


def new_record(
    ctx: EngineContext,
    request: CniRequest,
    plan: AttachmentPlan,
    capability_args: dict[str, Any],
) -> AttachmentRecord:
    """The record of ``plan``, resolved with the runtime's ``capability_args``."""
    runtime, entries = plan_entries(plan.attachments, capability_args)
    return AttachmentRecord(
        container_id=request.container_id,
        netns=request.netns,
        kind=RECORD_KIND,
        version=RECORD_VERSION,
        cni_version=ctx.config.cni_version,
        cni_args=list(request.cni_args),
        plugin_dirs=list(request.plugin_dirs),
        capability_args=runtime,
        pod_namespace=plan.pod_namespace,
        pod_name=plan.pod_name,
        pod_uid=plan.pod_uid,
        attachments=entries,
    )


class NoStore:
    """The store of a braid that has none: knows no NAD and no pod."""

    def get_nad(self, namespace: str, name: str) -> None:
        return None

    def get_pod(self, namespace: str, name: str, uid: str) -> None:
        return None
