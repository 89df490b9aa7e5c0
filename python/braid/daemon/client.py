"""A Python client of the daemon protocol: what the compiled shim does, for tests and tools."""

from __future__ import annotations

import base64
import socket
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from braid.daemon.protocol import CNI_VARIABLES, MAX_FRAME, PROTOCOL_VERSION, encode_frame

_LENGTH = struct.Struct(">I")


def cni_request(env: Mapping[str, str], stdin: bytes) -> dict[str, Any]:
    """The request frame's object for one CNI call."""
    return {
        "protocol": PROTOCOL_VERSION,
        "kind": "cni",
        "env": {key: env.get(key, "") for key in CNI_VARIABLES},
        "stdin": base64.b64encode(stdin).decode("ascii"),
    }


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the daemon closed the connection after {len(data)} bytes")
        data.extend(chunk)
    return bytes(data)


def exchange(
    socket_path: str | Path, request: dict[str, Any] | bytes, timeout: float = 120.0
) -> dict[str, Any]:
    """Sends one frame (an object, or raw bytes sent as they are) and returns the answer."""
    raw = request if isinstance(request, bytes) else encode_frame(request)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(socket_path))
        sock.sendall(raw)
        (length,) = _LENGTH.unpack(_recv_exactly(sock, _LENGTH.size))
        if length > MAX_FRAME:
            raise ConnectionError(f"the daemon sent a {length}-byte frame")
        answer = msgspec.json.decode(_recv_exactly(sock, length))
    if not isinstance(answer, dict):
        raise ConnectionError("the daemon's answer is not a JSON object")
    return answer


def call_cni(
    socket_path: str | Path, env: Mapping[str, str], stdin: bytes, timeout: float = 120.0
) -> tuple[bytes, int]:
    """One CNI call through the daemon: the bytes to print and the exit status."""
    answer = exchange(socket_path, cni_request(env, stdin), timeout)
    return base64.b64decode(answer["stdout"]), int(answer["exitCode"])


def is_ready(socket_path: str | Path, timeout: float = 5.0) -> bool:
    """The daemon's readiness; False when it cannot be reached."""
    try:
        answer = exchange(socket_path, {"protocol": PROTOCOL_VERSION, "kind": "health"}, timeout)
    except OSError:
        return False
    return answer.get("ready") is True
