# Hand-written stub of the Rust extension; checked against the built module by mypy.stubtest.

__all__ = [
    "CNI_VERSIONS",
    "CNI_CURRENT_VERSION",
    "convert_result",
    "parse_plugin_result",
    "result_version",
    "parse_plugin_error",
    "parse_version_output",
    "select_list_version",
    "negotiate_version",
    "parse_network_list",
    "conf_to_list",
    "append_plugins",
    "plugin_stdin",
    "build_cni_args",
    "parse_cni_args",
    "error_json",
    "namespace_id",
]

CNI_VERSIONS: list[str]
CNI_CURRENT_VERSION: str

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
def namespace_id(*, path: str) -> tuple[int, int]: ...
