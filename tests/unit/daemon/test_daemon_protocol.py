"""Protocol v1 frames: the golden fixtures parse, and re-encode to the same JSON."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import msgspec
import pytest

from braid.daemon.protocol import (
    MAX_FRAME,
    CniResponse,
    FrameError,
    HealthResponse,
    cni_response,
    decode_request,
    encode_frame,
    frame_body,
    health_response,
    incomplete_frame,
)
from braid.errors import CniError

FIXTURES = Path(__file__).parents[2] / "fixtures" / "protocol"


def golden(name: str) -> bytes:
    return (FIXTURES / name).read_bytes().strip()


def test_add_request_fixture_parses_with_exact_env_and_stdin() -> None:
    request = decode_request(golden("add-request.json"))
    assert request.kind == "cni"
    assert request.protocol == 1
    assert request.cni_env() == {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "ctr1",
        "CNI_NETNS": "/run/netns/pod1",
        "CNI_IFNAME": "eth0",
        "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0",
        "CNI_PATH": "/opt/cni/bin:/usr/lib/cni",
    }
    assert request.stdin_bytes() == b'{"cniVersion":"1.0.0","name":"braid","type":"braid"}'


def test_add_request_fixture_reencodes_to_the_same_object() -> None:
    request = decode_request(golden("add-request.json"))
    assert json.loads(msgspec.json.encode(request)) == json.loads(golden("add-request.json"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "add-response.json",
            cni_response(b'{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16"}]}', 0),
        ),
        (
            "health-response.json",
            health_response(ready=True, version="0.1.0", build="0123456789ab"),
        ),
    ],
)
def test_responses_encode_as_the_golden_frames(
    name: str, message: CniResponse | HealthResponse
) -> None:
    frame = encode_frame(message)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert json.loads(frame[4:]) == json.loads(golden(name))


def test_add_response_fixture_decodes_to_the_documented_stdout() -> None:
    response = msgspec.json.decode(golden("add-response.json"), type=CniResponse)
    assert response.exitCode == 0
    assert response.stdout_bytes() == b'{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16"}]}'


def test_health_request_fixture_parses() -> None:
    request = decode_request(golden("health-request.json"))
    assert (request.kind, request.env, request.stdin) == ("health", {}, "")


def test_unset_variables_are_empty_and_unknown_keys_are_ignored() -> None:
    body = b'{"protocol":1,"kind":"cni","env":{"CNI_COMMAND":"DEL"},"stdin":"","future":[1]}'
    env = decode_request(body).cni_env()
    assert env["CNI_COMMAND"] == "DEL"
    assert env["CNI_NETNS"] == ""
    assert env["CNI_PATH"] == ""


def test_a_newer_protocol_asks_for_a_daemon_upgrade() -> None:
    with pytest.raises(CniError) as err:
        decode_request(b'{"protocol":2,"kind":"cni"}')
    assert err.value.code == 11
    assert "upgrade the daemon" in err.value.msg


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1,2]",
        b'{"kind":"cni"}',
        b'{"protocol":"1","kind":"cni"}',
        b'{"protocol":0,"kind":"cni"}',
        b'{"protocol":1,"kind":"shell"}',
        b'{"protocol":1,"kind":"cni","env":{"CNI_COMMAND":3}}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"protocol":1,"kind":"cni","env":' * 5_000 + b"{}" + b"}" * 5_000,
        b'{"protocol":1,"kind":"cni","stdin":"\xff"}',
        b'{"protocol":1,"kind":"cni","env":{"CNI_IFNAME":"\xc3\x28"}}',
    ],
)
def test_malformed_requests_are_code_4(body: bytes) -> None:
    with pytest.raises(CniError) as err:
        decode_request(body)
    assert err.value.code == 4


def test_stdin_that_is_not_base64_is_code_4() -> None:
    request = decode_request(b'{"protocol":1,"kind":"cni","stdin":"***"}')
    with pytest.raises(CniError) as err:
        request.stdin_bytes()
    assert err.value.code == 4


def read_from(data: bytes) -> bytes:
    """The frame's body as the daemon takes it from the bytes received, or ``FrameError``."""
    body = frame_body(data)
    if body is None:
        raise FrameError(incomplete_frame(data))
    return body


def test_frame_body_is_the_frame_without_what_follows() -> None:
    body = golden("add-request.json")
    assert read_from(struct.pack(">I", len(body)) + body + b"trailing") == body


def test_oversized_frames_are_refused_before_reading_them() -> None:
    with pytest.raises(FrameError, match="exceeds"):
        read_from(struct.pack(">I", MAX_FRAME + 1))


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "before a frame header"),
        (b"\x00\x00", "before a frame header"),
        (struct.pack(">I", 10) + b"short", "frame cut short: 5 of 10 bytes"),
    ],
)
def test_truncated_frames_are_refused(data: bytes, why: str) -> None:
    with pytest.raises(FrameError, match=why):
        read_from(data)


def test_encoding_an_oversized_frame_is_refused() -> None:
    huge = cni_response(b"x" * MAX_FRAME, 0)
    with pytest.raises(FrameError):
        encode_frame(huge)
    assert base64.b64decode(huge.stdout)[:1] == b"x"
