"""Structured logs: one JSON object per line, each carrying the request's container and pod."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_fakes import ENV, STDIN, FakeEngine, running, sock

from braid.daemon.client import call_cni
from braid.daemon.logs import RequestTag, current_request, install_json_logging, tag_of


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    loggers = [logging.getLogger(n) for n in ("braid", "braid.daemon")]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    stream = io.StringIO()
    install_json_logging(stream)
    logging.getLogger("braid").setLevel(logging.INFO)
    yield stream
    for lg, (handlers, level, propagate) in zip(loggers, saved, strict=True):
        lg.handlers[:] = handlers
        lg.setLevel(level)
        lg.propagate = propagate


def test_every_line_of_a_request_names_its_container_and_pod(
    tmp_path: Path, captured: io.StringIO
) -> None:
    def go() -> None:
        with running(tmp_path, FakeEngine()) as daemon:
            call_cni(sock(daemon), ENV, STDIN)

    go()
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    engine_line = next(li for li in lines if li["msg"] == "engine ran")
    assert engine_line["logger"] == "braid.engine", "the engine's lines go through the daemon"
    answer = next(li for li in lines if li["msg"].startswith("ADD success"))
    for line in (engine_line, answer):
        assert (line["verb"], line["containerId"], line["pod"]) == ("ADD", "ctr-1", "team/web-0")
    startup = next(li for li in lines if li["msg"].startswith("serving on"))
    assert (startup["containerId"], startup["pod"]) == ("", "")
    assert {"time", "level"} <= startup.keys()


def test_pod_defaults_to_namespace_default_and_bad_args_do_not_break_the_tag() -> None:
    assert tag_of({"CNI_ARGS": "K8S_POD_NAME=a"}).pod == "default/a"
    assert tag_of({"CNI_ARGS": "garbage", "CNI_CONTAINERID": "c"}) == RequestTag(
        verb="", container_id="c", pod=""
    )


def test_exceptions_are_logged_inside_the_json_object(captured: io.StringIO) -> None:
    token = current_request.set(RequestTag(verb="DEL", container_id="c9", pod="ns/p"))
    try:
        raise ValueError("boom")  # noqa: TRY301 - the point is a real traceback
    except ValueError:
        logging.getLogger("braid.daemon").exception("failed")
    finally:
        current_request.reset(token)
    line = json.loads(captured.getvalue().splitlines()[-1])
    assert line["containerId"] == "c9"
    assert "ValueError: boom" in line["error"]


def test_a_failed_request_logs_the_cni_errors_code_and_reason(
    tmp_path: Path, captured: io.StringIO
) -> None:
    error = b'{"cniVersion":"1.0.0","code":7,"msg":"team/blue: no such NAD","details":"x"}\n'

    def failing(env: object, stdin: bytes, **kw: object) -> tuple[bytes, int]:
        return error, 1

    def go() -> None:
        with running(tmp_path, failing) as daemon:
            call_cni(sock(daemon), ENV, STDIN)

    go()
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    failed = next(li for li in lines if li["msg"].startswith("ADD failed"))
    assert failed["level"] == "error"
    assert failed["code"] == 7
    assert (failed["reason"], failed["details"]) == ("team/blue: no such NAD", "x")
    assert "code 7: team/blue: no such NAD (x)" in failed["msg"]
    assert (failed["containerId"], failed["pod"]) == ("ctr-1", "team/web-0")
