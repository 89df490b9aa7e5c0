# Hand-written stub of braid._native.cni, answered by braid_cni: results, versions,
# configuration lists, plugin stdin, CNI_ARGS, names and the error JSON.
# Checked against the built module by mypy.stubtest (make lint).

__all__ = [
    "BRAID_BUILD",
    "BRAID_VERSION",
    "CNI_CURRENT_VERSION",
    "CNI_VERSIONS",
    "ERROR_CODES",
    "MAX_CONTAINER_ID_BYTES",
    "READINESS_POLL_SECONDS",
    "READINESS_TIMEOUT_SECONDS",
    "append_plugins",
    "build_cni_args",
    "check_container_id",
    "conf_to_list",
    "container_id_problem",
    "convert_result",
    "error_json",
    "interface_name_problem",
    "negotiate_version",
    "network_name_problem",
    "parse_cni_args",
    "parse_network_list",
    "parse_plugin_error",
    "parse_plugin_result",
    "parse_version_output",
    "plugin_stdin",
    "result_version",
    "select_list_version",
]

CNI_VERSIONS: list[str]
ERROR_CODES: list[tuple[str, int]]
CNI_CURRENT_VERSION: str
BRAID_VERSION: str
BRAID_BUILD: str
MAX_CONTAINER_ID_BYTES: int
READINESS_POLL_SECONDS: float
READINESS_TIMEOUT_SECONDS: float

def convert_result(*, data: bytes, to_version: str) -> bytes: ...
def parse_plugin_result(*, data: bytes, config_version: str) -> bytes: ...
def result_version(*, data: bytes) -> str: ...
def parse_plugin_error(*, data: bytes) -> tuple[int, str, str]: ...
def parse_version_output(*, data: bytes) -> list[str]: ...
def select_list_version(*, cni_version: str, cni_versions: list[str]) -> str: ...
def negotiate_version(
    *, list_version: str, list_versions: list[str], plugin_versions: list[list[str]]
) -> str: ...
def parse_network_list(*, data: bytes) -> bytes: ...
def conf_to_list(*, data: bytes) -> bytes: ...
def append_plugins(*, network_list: bytes, plugins: list[bytes]) -> bytes: ...
def plugin_stdin(
    *,
    network_list: bytes,
    index: int,
    command: str,
    cni_version: str,
    capability_args: bytes | None = None,
    prev_result: bytes | None = None,
    valid_attachments: bytes | None = None,
    args_cni: bytes | None = None,
) -> bytes: ...
def build_cni_args(*, pairs: list[tuple[str, str]]) -> str: ...
def parse_cni_args(*, value: str) -> list[tuple[str, str]]: ...
def error_json(*, code: int, msg: str, details: str, cni_version: str) -> bytes: ...
def container_id_problem(*, value: str) -> str | None: ...
def check_container_id(*, command: str, value: str) -> None: ...
def network_name_problem(*, value: str) -> str | None: ...
def interface_name_problem(*, value: str) -> str | None: ...
