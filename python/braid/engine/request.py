"""The CNI request braid receives as a plugin: environment and stdin, validated.

Every problem becomes a ``CniError`` with the code the spec gives it: 3 missing container id,
4 other missing or invalid environment, 6 stdin that is not JSON or too large.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from braid.cni.request import (
    MAX_CONTAINER_ID_BYTES,
    check_container_id,
    interface_name_problem,
    parse_cni_args,
)
from braid.errors import (
    DECODE_FAILURE,
    INVALID_ENVIRONMENT,
    CniError,
)

MAX_STDIN = 1 << 20
COMMANDS = ("ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION")
_VARIABLES = ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH")


class CniRequest(msgspec.Struct, frozen=True):
    """One CNI call: the verb, its environment and the configuration braid was given."""

    command: str
    container_id: str = ""
    netns: str = ""
    ifname: str = ""
    cni_args: list[tuple[str, str]] = msgspec.field(default_factory=list)
    plugin_dirs: list[str] = msgspec.field(default_factory=list)
    config: bytes = b"{}"

    @property
    def names_no_record(self) -> bool:
        """Whether the container id is too long to name an attachment record
        (``names_no_record``)."""
        return names_no_record(self.container_id)

    def arg(self, key: str) -> str:
        """The value of one ``CNI_ARGS`` key ('' when absent)."""
        for k, v in self.cni_args:
            if k == key:
                return v
        return ""


def names_no_record(container_id: str) -> bool:
    """A container id too long to name an attachment record (``<id>.json``): an ADD of it is
    refused before anything runs, so a DEL of it has nothing to tear down."""
    return len(container_id.encode()) > MAX_CONTAINER_ID_BYTES


def read_request(env: Mapping[str, str], stdin: bytes) -> CniRequest:
    """Validates the CNI environment and stdin for the verb in ``CNI_COMMAND``."""
    command = env.get("CNI_COMMAND", "")
    if not command:
        raise CniError(INVALID_ENVIRONMENT, "CNI_COMMAND is not set")
    if command not in COMMANDS:
        raise CniError(INVALID_ENVIRONMENT, f"unknown CNI_COMMAND: {command}")
    if command == "VERSION":
        return CniRequest(command=command)
    if len(stdin) > MAX_STDIN:
        raise CniError(DECODE_FAILURE, f"stdin is larger than {MAX_STDIN} bytes; refused")
    try:
        doc = msgspec.json.decode(stdin)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        # RFC 8259 JSON is UTF-8; a document nested deeper than the decoder goes is refused
        # the same way (braid's own configuration never nests that deep).
        raise CniError(
            DECODE_FAILURE, "stdin is not a JSON network configuration", _reason(exc)
        ) from None
    if not isinstance(doc, dict):
        raise CniError(DECODE_FAILURE, "stdin is not a JSON object")
    _check_text(env)
    container_id = env.get("CNI_CONTAINERID", "")
    ifname = env.get("CNI_IFNAME", "")
    netns = env.get("CNI_NETNS", "")
    if command in ("ADD", "DEL", "CHECK"):
        _check_container(command, container_id, ifname, netns)
    try:
        cni_args = parse_cni_args(env.get("CNI_ARGS", ""))
    except CniError as exc:
        raise CniError(INVALID_ENVIRONMENT, f"CNI_ARGS is invalid: {exc.msg}") from exc
    path = [p for p in env.get("CNI_PATH", "").split(":") if p]
    return CniRequest(
        command=command,
        container_id=container_id,
        netns=netns,
        ifname=ifname,
        cni_args=cni_args,
        plugin_dirs=path,
        config=stdin,
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "JSON is nested too deeply"
    return str(exc)


def _check_text(env: Mapping[str, str]) -> None:
    """Every CNI variable is UTF-8 text (``os.environ`` holds undecodable bytes as lone
    surrogates, which no plugin, file name or record can carry)."""
    for name in _VARIABLES:
        try:
            env.get(name, "").encode()
        except UnicodeEncodeError:
            raise CniError(INVALID_ENVIRONMENT, f"{name} is not valid UTF-8") from None


def _check_container(command: str, container_id: str, ifname: str, netns: str) -> None:
    check_container_id(command, container_id)
    problem = interface_name_problem(ifname)
    if problem:
        raise CniError(INVALID_ENVIRONMENT, f"CNI_IFNAME {ifname!r} {problem}")
    if command != "DEL" and not netns:
        raise CniError(INVALID_ENVIRONMENT, f"CNI_NETNS is required for {command}")
