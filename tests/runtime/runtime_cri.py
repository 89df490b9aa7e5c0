"""A minimal CRI client: gRPC over containerd's unix socket, kubelet's side of the pod sandbox
calls the tier needs (Version, RunPodSandbox, PodSandboxStatus, StopPodSandbox,
RemovePodSandbox).

The `runtime.v1` messages are declared at run time with protobuf descriptors, field numbers as
in the CRI's api.proto; fields the tier never reads are left out (protobuf skips unknown fields
on parse). No .proto file, no protoc, no crictl.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

PACKAGE = "runtime.v1"
SERVICE = f"/{PACKAGE}.RuntimeService"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _F.TYPE_STRING,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "bool": _F.TYPE_BOOL,
}

# message -> [(field, number, type, repeated)]; `map` types are "map<string>".
_MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    "VersionRequest": [("version", 1, "string", False)],
    "VersionResponse": [
        ("version", 1, "string", False),
        ("runtime_name", 2, "string", False),
        ("runtime_version", 3, "string", False),
        ("runtime_api_version", 4, "string", False),
    ],
    "PodSandboxMetadata": [
        ("name", 1, "string", False),
        ("uid", 2, "string", False),
        ("namespace", 3, "string", False),
        ("attempt", 4, "uint32", False),
    ],
    "PortMapping": [
        ("protocol", 1, "int32", False),  # an enum on the wire: 0 TCP, 1 UDP, 2 SCTP
        ("container_port", 2, "int32", False),
        ("host_port", 3, "int32", False),
        ("host_ip", 4, "string", False),
    ],
    "PodSandboxConfig": [
        ("metadata", 1, "PodSandboxMetadata", False),
        ("hostname", 2, "string", False),
        ("log_directory", 3, "string", False),
        ("port_mappings", 5, "PortMapping", True),
        ("labels", 6, "map<string>", False),
        ("annotations", 7, "map<string>", False),
    ],
    "RunPodSandboxRequest": [
        ("config", 1, "PodSandboxConfig", False),
        ("runtime_handler", 2, "string", False),
    ],
    "RunPodSandboxResponse": [("pod_sandbox_id", 1, "string", False)],
    "PodSandboxStatusRequest": [
        ("pod_sandbox_id", 1, "string", False),
        ("verbose", 2, "bool", False),
    ],
    "PodIP": [("ip", 1, "string", False)],
    "PodSandboxNetworkStatus": [
        ("ip", 1, "string", False),
        ("additional_ips", 2, "PodIP", True),
    ],
    "PodSandboxStatus": [
        ("id", 1, "string", False),
        ("metadata", 2, "PodSandboxMetadata", False),
        ("state", 3, "int32", False),  # an enum on the wire: 0 READY, 1 NOTREADY
        ("created_at", 4, "int64", False),
        ("network", 5, "PodSandboxNetworkStatus", False),
        ("annotations", 8, "map<string>", False),
    ],
    "PodSandboxStatusResponse": [
        ("status", 1, "PodSandboxStatus", False),
        ("info", 2, "map<string>", False),
    ],
    "StopPodSandboxRequest": [("pod_sandbox_id", 1, "string", False)],
    "StopPodSandboxResponse": [],
    "RemovePodSandboxRequest": [("pod_sandbox_id", 1, "string", False)],
    "RemovePodSandboxResponse": [],
}

SANDBOX_READY = 0
SANDBOX_NOTREADY = 1


def _field(message: descriptor_pb2.DescriptorProto, spec: tuple[str, int, str, bool]) -> None:
    name, number, kind, repeated = spec
    field = message.field.add(name=name, number=number)
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if kind in _SCALARS:
        field.type = _SCALARS[kind]
        return
    field.type = _F.TYPE_MESSAGE
    if kind == "map<string>":
        # A proto3 map is a repeated nested `<Name>Entry` message marked map_entry.
        entry_name = "".join(part.title() for part in name.split("_")) + "Entry"
        entry = message.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        field.label = _F.LABEL_REPEATED
        field.type_name = f".{PACKAGE}.{message.name}.{entry_name}"
    else:
        field.type_name = f".{PACKAGE}.{kind}"


def _message_classes() -> dict[str, type[Message]]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="braid_runtime_tier_cri.proto", package=PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for spec in fields:
            _field(message, spec)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }


MESSAGES = _message_classes()


@dataclass
class SandboxStatus:
    """What the tier reads of PodSandboxStatus (verbose)."""

    id: str
    state: int
    ip: str
    additional_ips: list[str]
    netns_path: str


def _network_namespace(info: dict[str, Any]) -> str:
    """The sandbox's netns path from containerd's verbose info (its OCI runtime spec)."""
    namespaces = info.get("runtimeSpec", {}).get("linux", {}).get("namespaces", [])
    for namespace in namespaces:
        if namespace.get("type") == "network":
            return str(namespace.get("path", ""))
    return ""


class CriClient:
    """RuntimeService calls over `unix://<socket>`; every call has a deadline."""

    def __init__(self, socket: Path, timeout: float = 60.0) -> None:
        self._channel = grpc.insecure_channel(f"unix://{socket}")
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: str, request: Message) -> Any:
        name = type(request).DESCRIPTOR.name.removesuffix("Request")
        stub = self._channel.unary_unary(
            f"{SERVICE}/{method}",
            request_serializer=lambda msg: msg.SerializeToString(),
            response_deserializer=MESSAGES[f"{name}Response"].FromString,
        )
        return stub(request, timeout=self._timeout)

    def version(self) -> Any:
        return self._call("Version", MESSAGES["VersionRequest"](version="v1"))

    def run_pod_sandbox(self, config: dict[str, Any]) -> str:
        """Runs a sandbox from a crictl-style pod config (snake_case or camelCase keys)."""
        sandbox_config = json_format.ParseDict(
            config, MESSAGES["PodSandboxConfig"](), ignore_unknown_fields=True
        )
        request = MESSAGES["RunPodSandboxRequest"](config=sandbox_config)
        return str(self._call("RunPodSandbox", request).pod_sandbox_id)

    def pod_sandbox_status(self, sandbox_id: str) -> SandboxStatus:
        request = MESSAGES["PodSandboxStatusRequest"](pod_sandbox_id=sandbox_id, verbose=True)
        response = self._call("PodSandboxStatus", request)
        info = json.loads(response.info["info"]) if "info" in response.info else {}
        status = response.status
        return SandboxStatus(
            id=status.id,
            state=status.state,
            ip=status.network.ip,
            additional_ips=[pod_ip.ip for pod_ip in status.network.additional_ips],
            netns_path=_network_namespace(info),
        )

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._call("StopPodSandbox", MESSAGES["StopPodSandboxRequest"](pod_sandbox_id=sandbox_id))

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        request = MESSAGES["RemovePodSandboxRequest"](pod_sandbox_id=sandbox_id)
        self._call("RemovePodSandbox", request)
