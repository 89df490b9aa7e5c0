"""The shim ↔ daemon wire protocol, version 1 (``docs/protocol.md``).

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (one object);
frames over ``MAX_FRAME`` bytes are refused. One request frame and one response frame per
connection. Readers ignore unknown keys.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

import msgspec

from braid.errors import INVALID_ENVIRONMENT, TRY_AGAIN_LATER, CniError

PROTOCOL_VERSION = 1
MAX_FRAME = 4 << 20
CNI_VARIABLES = (
    "CNI_COMMAND",
    "CNI_CONTAINERID",
    "CNI_NETNS",
    "CNI_IFNAME",
    "CNI_ARGS",
    "CNI_PATH",
)
_LENGTH = struct.Struct(">I")
HEADER_BYTES = _LENGTH.size  # the big-endian length before each frame body


class FrameError(Exception):
    """A frame that cannot be read: too large, truncated, or not one JSON object."""


class Request(msgspec.Struct, frozen=True):
    """One request: ``kind`` ``cni`` (with ``env`` and ``stdin``), ``health``, or ``hotplug``
    (``braidctl attach``/``detach``: the pod ``env`` names with ``K8S_POD_NAMESPACE`` and
    ``K8S_POD_NAME`` brought to its selection annotation; answered like ``cni``, with the
    outcome's JSON as ``stdout``)."""

    protocol: int
    kind: str
    env: dict[str, str] = msgspec.field(default_factory=dict)
    stdin: str = ""

    def stdin_bytes(self) -> bytes:
        """The exact stdin bytes of the CNI call (base64 in the frame)."""
        try:
            return base64.b64decode(self.stdin, validate=True)
        except binascii.Error as exc:
            raise CniError(
                INVALID_ENVIRONMENT, "request `stdin` is not valid base64", str(exc)
            ) from exc

    def cni_env(self) -> dict[str, str]:
        """The six CNI variables exactly as the runtime set them ('' when unset)."""
        return {key: self.env.get(key, "") for key in CNI_VARIABLES}


class CniResponse(msgspec.Struct, frozen=True):
    """The answer to a ``cni`` request: what the shim prints and its exit status."""

    protocol: int
    exitCode: int
    stdout: str

    def stdout_bytes(self) -> bytes:
        return base64.b64decode(self.stdout, validate=True)


class HealthResponse(msgspec.Struct, frozen=True, omit_defaults=True):
    """The answer to a ``health`` request, with the daemon's braid version and build (what
    ``braidctl doctor`` compares with the shim's) and, with ``--cni-conf-dir``, what it sees of
    its conflist (``braid.daemon.conflist_watch.ConfListState``, which doctor reports)."""

    protocol: int
    ready: bool
    braidVersion: str = ""
    braidBuild: str = ""
    cniConfig: dict[str, Any] | None = None


def cni_response(stdout: bytes, exit_code: int) -> CniResponse:
    return CniResponse(
        protocol=PROTOCOL_VERSION,
        exitCode=exit_code,
        stdout=base64.b64encode(stdout).decode("ascii"),
    )


def error_response(error: CniError) -> CniResponse:
    """A CNI error document for the shim to print, with exit status 1."""
    return cni_response(error.to_json(), 1)


def health_response(
    *, ready: bool, version: str, build: str, cni_config: dict[str, Any] | None = None
) -> HealthResponse:
    return HealthResponse(
        protocol=PROTOCOL_VERSION,
        ready=ready,
        braidVersion=version,
        braidBuild=build,
        cniConfig=cni_config,
    )


def encode_frame(message: msgspec.Struct | dict[str, Any]) -> bytes:
    """The length prefix followed by the message's JSON."""
    body = msgspec.json.encode(message)
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME}-byte limit")
    return _LENGTH.pack(len(body)) + body


def decode_request(body: bytes) -> Request:
    """Parses a request body; a newer ``protocol`` or a bad shape is a ``CniError``."""
    try:
        top = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise CniError(INVALID_ENVIRONMENT, "malformed request frame: not JSON", str(exc)) from None
    except RecursionError:
        raise CniError(
            INVALID_ENVIRONMENT, "malformed request frame: JSON nested too deeply"
        ) from None
    if not isinstance(top, dict):
        raise CniError(INVALID_ENVIRONMENT, "malformed request frame: not a JSON object")
    version = top.get("protocol")
    if isinstance(version, int) and not isinstance(version, bool) and version > PROTOCOL_VERSION:
        raise CniError(
            TRY_AGAIN_LATER,
            f"the shim speaks protocol {version}, this daemon at most {PROTOCOL_VERSION}: "
            "upgrade the daemon",
        )
    try:
        request = msgspec.convert(top, type=Request)
    except msgspec.ValidationError as exc:
        raise CniError(INVALID_ENVIRONMENT, "malformed request frame", str(exc)) from exc
    if request.protocol < 1:
        raise CniError(INVALID_ENVIRONMENT, f"unknown protocol version {request.protocol}")
    if request.kind not in ("cni", "health", "hotplug"):
        raise CniError(INVALID_ENVIRONMENT, f"unknown request kind {request.kind!r}")
    return request


def frame_of(body: bytes) -> bytes:
    """A body with its length prefix again (a frame read, then handed on whole)."""
    return _LENGTH.pack(len(body)) + body


def frame_body(buffer: bytes | bytearray) -> bytes | None:
    """The body of the frame at the start of ``buffer``, or None while it is incomplete;
    ``FrameError`` when its header announces more than ``MAX_FRAME`` bytes."""
    if len(buffer) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack_from(buffer)
    if length > MAX_FRAME:
        raise FrameError(f"frame of {length} bytes exceeds the {MAX_FRAME}-byte limit")
    end = _LENGTH.size + length
    return bytes(buffer[_LENGTH.size : end]) if len(buffer) >= end else None


def incomplete_frame(buffer: bytes | bytearray) -> str:
    """Why the bytes a client sent before closing are not a frame."""
    if len(buffer) < _LENGTH.size:
        return "connection closed before a frame header"
    (length,) = _LENGTH.unpack_from(buffer)
    return f"frame cut short: {len(buffer) - _LENGTH.size} of {length} bytes"
