#!/usr/bin/env python3
"""Fuzz target: kubelet's PodResources API v1 answers, the protobuf bytes of ``Get`` and
``List`` replies, as braid reads them (``braid.k8s.podresources.client``).

The input's first byte picks the call (bit 0: a kubelet without ``Get``, so braid falls back to
``List``); the rest is the reply's bytes. The gRPC channel is the one part not run: a stub
decodes the bytes with the generated message's deserializer, as grpcio's unary call does, and a
reply that does not decode is the ``INTERNAL`` status grpcio gives then. Properties: the pod's
devices, or a ``CniError`` 11 (the ADD is retried), never a traceback; each device plugin
resource and DRA claim maps to device IDs that are the reply's own, a claim's without the CDI
name's ``vendor/class=``; from ``List``, the pod's devices are those ``Get`` gives for the same
pod, and every device of another pod of the node names that pod.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

from typing import Any

import atheris
import grpc  # type: ignore[import-untyped]
from fuzz_harness import expect_code, main

with atheris.instrument_imports():
    from braid.errors import TRY_AGAIN_LATER
    from braid.k8s.podresources import api_pb2
    from braid.k8s.podresources.client import PodDevices, _ask

NAMESPACE, NAME = "default", "web-0"


class Status(grpc.RpcError):  # type: ignore[misc]
    """A call's failure as grpcio raises it."""

    def __init__(self, code: Any, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> Any:
        return self._code

    def details(self) -> str:
        return self._details


class Stub:
    """kubelet's answers: ``reply`` for the method asked, decoded as grpcio decodes it."""

    def __init__(self, reply: bytes, *, has_get: bool) -> None:
        self.reply, self.has_get = reply, has_get

    def _decode(self, message: Any) -> Any:
        try:
            return message.FromString(self.reply)
        except Exception:
            raise Status(grpc.StatusCode.INTERNAL, "Exception deserializing response!") from None

    def Get(self, request: Any, **_: Any) -> Any:
        assert (request.pod_namespace, request.pod_name) == (NAMESPACE, NAME)
        if not self.has_get:
            raise Status(grpc.StatusCode.UNIMPLEMENTED, "unknown method Get")
        return self._decode(api_pb2.GetPodResourcesResponse)

    def List(self, request: Any, **_: Any) -> Any:
        return self._decode(api_pb2.ListPodResourcesResponse)


def ask(reply: bytes, *, has_get: bool) -> PodDevices | None:
    try:
        return _ask(Stub(reply, has_get=has_get), "/var/lib/kubelet/pod-resources/kubelet.sock",
                    NAMESPACE, NAME, 1.0)  # fmt: skip
    except Exception as exc:  # anything but a CniError 11 is the finding
        expect_code(exc, {TRY_AGAIN_LATER}, "PodResources")
        assert "cannot decode" in exc.msg, exc  # type: ignore[attr-defined]
        return None


def reply_ids(pods: Any) -> set[str]:
    found: set[str] = set()
    for pod in pods:
        for container in pod.containers:
            for group in container.devices:
                found.update(group.device_ids)
            for claim in container.dynamic_resources:
                for resource in claim.claim_resources:
                    found.update(cdi.name.partition("=")[2] for cdi in resource.cdi_devices)
    return found


def check_found(found: PodDevices, ids: set[str]) -> None:
    for table in (found.devices, found.claims):
        for key, devices in table.items():
            assert isinstance(key, str), key
            assert all(isinstance(d, str) and d in ids for d in devices), devices
    for devices in found.claims.values():
        assert all(d and "=" not in d for d in devices), devices


def check_list(found: PodDevices, reply: bytes) -> None:
    listed = api_pb2.ListPodResourcesResponse.FromString(reply).pod_resources
    ours = [p for p in listed if (p.namespace, p.name) == (NAMESPACE, NAME)]
    alone = api_pb2.GetPodResourcesResponse(pod_resources=ours[0]) if ours else None
    if len(ours) == 1 and alone is not None:
        got = ask(alone.SerializeToString(), has_get=True)
        assert got is not None
        assert (got.devices, got.claims) == (found.devices, found.claims), "List and Get differ"
    for pod in listed:
        if (pod.namespace, pod.name) == (NAMESPACE, NAME):
            continue
        mine = PodDevices()
        mine.take(pod)
        for resource, devices in list(mine.devices.items()) + list(mine.claims.items()):
            for device in devices:
                assert f"{pod.namespace}/{pod.name}" in found.other_pods(resource, device)


def check(data: bytes) -> None:
    has_get = not (data[:1] and data[0] & 1)
    reply = data[1:]
    found = ask(reply, has_get=has_get)
    if found is None:
        return
    assert found.method == ("Get" if has_get else "List")
    message = api_pb2.GetPodResourcesResponse if has_get else api_pb2.ListPodResourcesResponse
    decoded = message.FromString(reply)
    pods = [decoded.pod_resources] if has_get else list(decoded.pod_resources)
    check_found(found, reply_ids(pods))
    if not has_get:
        check_list(found, reply)


if __name__ == "__main__":
    main(check)
