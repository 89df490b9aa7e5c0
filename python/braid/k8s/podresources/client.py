"""The devices kubelet gave a pod, asked over its PodResources API v1 unix socket.

``Get`` (the pod alone) where kubelet serves it; ``List`` (every pod of the node) where it does
not: kubelets without the ``KubeletPodResourcesGet`` feature answer ``Unimplemented`` or an
error saying the method is disabled. Every failure to get an answer, a missing socket, a
kubelet slower than ``timeout``, a reply that does not decode, is ``TRY_AGAIN_LATER`` (11): the
runtime retries the ADD, and nothing was attached. ``timeout`` bounds both calls together.
"""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]

from braid.errors import TRY_AGAIN_LATER, CniError
from braid.k8s.podresources import api_pb2, api_pb2_grpc

# What braid accepts from kubelet in one reply (Multus's bound too): a node's List is large.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_FALLBACK = frozenset({grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNKNOWN})


def plugin_devices(container: Any) -> list[tuple[str, list[str]]]:
    """(resource name, device IDs) of each device plugin resource of a container."""
    return [(str(g.resource_name), [str(d) for d in g.device_ids]) for g in container.devices]


def claim_devices(container: Any) -> list[tuple[str, list[str]]]:
    """(claim name, device IDs) of each DRA claim of a container (``dynamic_resources``,
    kubelet 1.31 and later), each device's ID the device part of its CDI name
    (``vendor.example/class=ID``), as Multus v4.1-v4.3 read them; a CDI name that is not of
    that form is left out."""
    found = []
    for claim in container.dynamic_resources:
        ids = []
        for resource in claim.claim_resources:
            for cdi in resource.cdi_devices:
                parts = str(cdi.name).split("=")
                if len(parts) == 2 and parts[0] and parts[1]:
                    ids.append(parts[1])
        found.append((str(claim.claim_name), ids))
    return found


class PodDevices:
    """Per resource name, the device IDs of a pod's containers in kubelet's order
    (``devices``: device plugins'; ``claims``: DRA claims', by claim name), and per device ID
    the other pods of the node kubelet reports it for (``List`` only)."""

    def __init__(self) -> None:
        self.devices: dict[str, list[str]] = {}
        self.claims: dict[str, list[str]] = {}
        self.elsewhere: dict[str, list[str]] = {}
        self.method = ""

    def take(self, pod: Any) -> None:
        for container in pod.containers:
            for resource, ids in plugin_devices(container):
                self.devices.setdefault(resource, []).extend(ids)
            for claim, ids in claim_devices(container):
                self.claims.setdefault(claim, []).extend(ids)

    def note_other(self, pod: Any) -> None:
        for container in pod.containers:
            for resource, ids in plugin_devices(container) + claim_devices(container):
                for device in ids:
                    pods = self.elsewhere.setdefault(f"{resource}\0{device}", [])
                    if f"{pod.namespace}/{pod.name}" not in pods:
                        pods.append(f"{pod.namespace}/{pod.name}")

    def other_pods(self, resource: str, device: str) -> list[str]:
        return self.elsewhere.get(f"{resource}\0{device}", [])


def _unavailable(socket: str, what: str, details: str = "") -> CniError:
    return CniError(
        TRY_AGAIN_LATER,
        f"kubelet's PodResources API at {socket} {what}; the ADD is to be retried "
        "(braid configuration key `podResourcesSocket`)",
        details,
    )


def _check_socket(socket: str, local: str) -> None:
    try:
        mode = Path(local).stat().st_mode
    except OSError as exc:
        raise _unavailable(socket, "cannot be reached", exc.strerror or str(exc)) from None
    if not stat.S_ISSOCK(mode):
        raise _unavailable(socket, "is not a unix socket")


def pod_devices(
    socket: str, namespace: str, name: str, *, timeout: float, local: str | None = None
) -> PodDevices:
    """The devices kubelet reports for pod ``namespace/name``. ``socket``: the node's path
    (named in errors); ``local``: where this process opens it (the same without a root)."""
    path = local or socket
    _check_socket(socket, path)
    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", 1024 * 1024),
        ("grpc.enable_retries", 0),
    ]
    with grpc.insecure_channel(f"unix:{path}", options=options) as channel:
        stub = api_pb2_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]
        return _ask(stub, socket, namespace, name, timeout)


def _ask(stub: Any, socket: str, namespace: str, name: str, timeout: float) -> PodDevices:
    found = PodDevices()
    deadline = time.monotonic() + timeout  # for both calls together
    request = api_pb2.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
    try:
        reply = stub.Get(request, timeout=timeout, wait_for_ready=False)
    except grpc.RpcError as exc:
        if exc.code() not in _FALLBACK:
            raise _failed(socket, "Get", exc) from None
    else:
        found.method = "Get"
        found.take(reply.pod_resources)
        return found
    try:
        left = max(deadline - time.monotonic(), 0.001)
        listed = stub.List(api_pb2.ListPodResourcesRequest(), timeout=left)
    except grpc.RpcError as exc:
        raise _failed(socket, "List", exc) from None
    found.method = "List"
    for pod in listed.pod_resources:
        if pod.namespace == namespace and pod.name == name:
            found.take(pod)
        else:
            found.note_other(pod)
    return found


def _failed(socket: str, method: str, exc: Any) -> CniError:
    code = exc.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        what = "did not answer in time"
    elif code == grpc.StatusCode.UNAVAILABLE:
        what = "cannot be reached"
    elif code == grpc.StatusCode.INTERNAL:
        what = f"answered {method} with what braid cannot decode"
    else:
        what = f"refused {method}"
    return _unavailable(socket, what, f"{method}: {code.name}: {exc.details()}")
