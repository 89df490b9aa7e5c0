"""Structured logs of the daemon: one JSON object per line, on stderr.

Every line carries the request it belongs to (``containerId``, ``pod`` as namespace/name from
``CNI_ARGS``, ``verb``), taken from a context variable that the thread serving the request sets
in the request's own context. Lines outside any request carry empty values.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import time
from dataclasses import dataclass
from typing import TextIO

import msgspec

from braid.cni.request import parse_cni_args
from braid.errors import CniError

DAEMON_LOGGER = "braid.daemon"


@dataclass(frozen=True)
class RequestTag:
    """What identifies a request in its log lines."""

    verb: str = ""
    container_id: str = ""
    pod: str = ""


current_request: contextvars.ContextVar[RequestTag] = contextvars.ContextVar(
    "braid_daemon_request",
    default=RequestTag(),  # noqa: B039 - frozen, never mutated
)


def tag_of(env: dict[str, str]) -> RequestTag:
    """The request's verb, container id and pod (``K8S_POD_NAMESPACE``/``K8S_POD_NAME``)."""
    pod = ""
    try:
        args = dict(parse_cni_args(env.get("CNI_ARGS", "")))
    except CniError:
        args = {}
    if args.get("K8S_POD_NAME"):
        pod = f"{args.get('K8S_POD_NAMESPACE') or 'default'}/{args['K8S_POD_NAME']}"
    return RequestTag(
        verb=env.get("CNI_COMMAND", ""),
        container_id=env.get("CNI_CONTAINERID", ""),
        pod=pod,
    )


def utc_timestamp(created: float) -> str:
    """``created`` as ISO 8601 in UTC with milliseconds: ``2024-05-01T12:00:00.123+00:00``."""
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{millis:03d}+00:00"


class JsonLineFormatter(logging.Formatter):
    """``{"time", "level", "logger", "msg", "verb", "containerId", "pod"[, "code", "reason",
    "details"][, "error"]}``: ``code``, ``reason`` and ``details`` are those of the CNI error a
    failed request answered (a record's ``cni_error``), ``error`` a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        tag = current_request.get()
        line: dict[str, object] = {
            "time": utc_timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "verb": tag.verb,
            "containerId": tag.container_id,
            "pod": tag.pod,
        }
        cni_error = getattr(record, "cni_error", None)
        if isinstance(cni_error, dict):
            line["code"] = cni_error.get("code", 0)
            line["reason"] = cni_error.get("msg", "")
            if cni_error.get("details"):
                line["details"] = cni_error["details"]
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return msgspec.json.encode(line).decode()


def install_json_logging(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Sends the daemon's and the engine's log records, as JSON lines, to ``stream``.

    The engine's logger (``braid``) gets the handler first, so the engine's own
    ``configure_logging`` keeps it and only sets the level from each request's ``logLevel``;
    the daemon's logger has its own level and does not propagate (no line twice).
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    engine = logging.getLogger("braid")
    for old in list(engine.handlers):
        engine.removeHandler(old)
    engine.addHandler(handler)
    daemon = logging.getLogger(DAEMON_LOGGER)
    for old in list(daemon.handlers):
        daemon.removeHandler(old)
    daemon.addHandler(handler)
    daemon.setLevel(level)
    daemon.propagate = False
