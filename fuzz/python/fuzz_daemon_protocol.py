#!/usr/bin/env python3
"""Fuzz target: the daemon's reading of the shim's frames (``braid.daemon.protocol``).

Properties: a frame's body is found or the buffer is incomplete or refused with
``FrameError``; a request body decodes to a ``Request`` or is a ``CniError`` with code 4 (11
for a newer protocol); a request's stdin is its bytes or code 4; a decoded request, framed
again, decodes to the same request.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import atheris
from fuzz_harness import expect_code, main

with atheris.instrument_imports():
    from braid.daemon import protocol
    from braid.errors import INVALID_ENVIRONMENT, TRY_AGAIN_LATER


def check(data: bytes) -> None:
    try:
        body = protocol.frame_body(data)
    except protocol.FrameError:
        body = None
    else:
        if body is not None:
            assert protocol.frame_of(body) == data[: len(body) + protocol.HEADER_BYTES]
    for candidate in (data, body):
        if candidate is not None:
            request_of(candidate)


def request_of(body: bytes) -> None:
    try:
        request = protocol.decode_request(body)
    except Exception as exc:  # anything but a CniError 4 or 11 is the finding
        expect_code(exc, {INVALID_ENVIRONMENT, TRY_AGAIN_LATER}, "decode_request")
        return
    assert request.kind in ("cni", "health")
    env = request.cni_env()
    assert list(env) == list(protocol.CNI_VARIABLES)
    try:
        request.stdin_bytes()
    except Exception as exc:
        expect_code(exc, {INVALID_ENVIRONMENT}, "stdin_bytes")
    framed = protocol.encode_frame(request)
    again = protocol.frame_body(framed)
    assert again is not None
    assert protocol.decode_request(again) == request, "a request does not round trip"


if __name__ == "__main__":
    main(check)
