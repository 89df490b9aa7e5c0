# Hand-written stub of the Rust extension; checked against the built module by mypy.stubtest.

from collections.abc import Sequence
from typing import Literal, final

__all__ = [
    "BRAID_BUILD",
    "BRAID_VERSION",
    "CACHE_KIND",
    "CNI_CURRENT_VERSION",
    "CNI_VERSIONS",
    "ERROR_CODES",
    "EXIT_GRACE_SECONDS",
    "GC_LOCK_NAME",
    "MAX_CACHE_ENTRY_BYTES",
    "MAX_CONTAINER_ID_BYTES",
    "MAX_STDOUT_BYTES",
    "NODE_FILE_NAME",
    "NODE_PATH_KEYS",
    "READINESS_POLL_SECONDS",
    "READINESS_TIMEOUT_SECONDS",
    "RECORD_KIND",
    "RECORD_VERSION",
    "SPARE_SIZE",
    "SPARE_SUFFIX",
    "VERSION_STDIN",
    "DurableWrite",
    "HeldLock",
    "PluginProcess",
    "StartingPlugin",
    "append_plugins",
    "build_cni_args",
    "cache_entry_path",
    "cached_result",
    "check_closed_path",
    "check_container_id",
    "conf_to_list",
    "container_id_problem",
    "container_lock_name",
    "convert_result",
    "decode_record",
    "del_failed",
    "del_stdins",
    "device_info_dirs",
    "discover_spares",
    "error_json",
    "find_plugin",
    "interface_name_problem",
    "is_meta_plugin",
    "is_plain_plugin_type",
    "judge_exit",
    "link_info",
    "list_links",
    "list_routes",
    "lock_container",
    "lock_gc",
    "merge_capability_args",
    "namespace_id",
    "negotiate_version",
    "network_name_problem",
    "no_output_error",
    "parse_cni_args",
    "parse_network_list",
    "parse_plugin_error",
    "parse_plugin_result",
    "parse_version_output",
    "plugin_env",
    "plugin_search_dirs",
    "plugin_stdin",
    "record_container",
    "remove_device_info_dir",
    "result_version",
    "run_sequence",
    "select_list_version",
    "set_default_route",
    "shim_settings",
    "spare_held",
    "spawn_plugin",
    "split_capability_args",
    "start_durable_write",
    "start_plugin",
    "supported_versions",
    "teardown_order",
    "trusted_paths",
    "version_at_least",
    "version_env",
    "write_durable",
]

CNI_VERSIONS: list[str]
ERROR_CODES: list[tuple[str, int]]
CNI_CURRENT_VERSION: str
BRAID_VERSION: str
BRAID_BUILD: str
MAX_CONTAINER_ID_BYTES: int
READINESS_POLL_SECONDS: float
READINESS_TIMEOUT_SECONDS: float
RECORD_KIND: str
RECORD_VERSION: int
CACHE_KIND: str
EXIT_GRACE_SECONDS: float
GC_LOCK_NAME: str
MAX_CACHE_ENTRY_BYTES: int
MAX_STDOUT_BYTES: int
VERSION_STDIN: bytes
SPARE_SIZE: int
SPARE_SUFFIX: str
NODE_FILE_NAME: str
NODE_PATH_KEYS: list[tuple[str, str]]

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
def find_plugin(
    *, plugin_type: str, dirs: list[str], seen: list[str] | None = None
) -> tuple[int, int, int, int, int]: ...
def is_meta_plugin(*, plugin_type: str) -> bool: ...
def is_plain_plugin_type(*, plugin_type: str) -> bool: ...
def plugin_search_dirs(*, bin_dir: str, cni_path: str) -> list[str]: ...
def plugin_env(
    *,
    environ: dict[str, str],
    command: str,
    container_id: str,
    netns: str,
    ifname: str,
    args: str,
    plugin_dirs: Sequence[str],
) -> dict[str, str]: ...
def version_env(*, environ: dict[str, str]) -> dict[str, str]: ...
def judge_exit(
    *, returncode: int, stdout: bytes, stderr: bytes, plugin_type: str
) -> tuple[int, str, str, str] | None: ...
def supported_versions(
    *, returncode: int, stdout: bytes, stderr: bytes, plugin_type: str
) -> list[str]: ...
def no_output_error(
    *,
    kind: Literal["timeout", "overflow", "io", "spawn"],
    path: str,
    timeout: float | None = None,
    errno: int = 0,
    text: str = "",
) -> tuple[int, str, str]: ...
def cache_entry_path(*, cache_dir: str, network: str, container_id: str, ifname: str) -> str: ...
def cached_result(*, data: bytes) -> tuple[bool, bytes | None]: ...
def del_stdins(
    *,
    network_list: bytes,
    plugins: int,
    cni_version: str,
    capability_args: bytes | None = None,
    args_cni: bytes | None = None,
    prev_result: bytes | None = None,
) -> tuple[list[bytes], str | None]: ...
def container_lock_name(*, container_id: str) -> str: ...

@final
class HeldLock:
    def release(self) -> None: ...

def lock_container(*, dir: str, container_id: str, wait: float | None = None) -> HeldLock: ...
def lock_gc(*, dir: str, wait: float | None = None) -> HeldLock: ...
def spare_held(*, data: bytes) -> tuple[str, int | str]: ...
def discover_spares(*, dir: str) -> list[tuple[str, str, str, int | str]]: ...
def shim_settings(*, data: bytes) -> dict[str, str | float]: ...
def version_at_least(*, version: str, minimum: str) -> bool: ...
def container_id_problem(*, value: str) -> str | None: ...
def check_container_id(*, command: str, value: str) -> None: ...
def network_name_problem(*, value: str) -> str | None: ...
def interface_name_problem(*, value: str) -> str | None: ...
def list_routes(*, netns: str) -> bytes: ...
def set_default_route(
    *, netns: str, family: int, gateway: str, ifname: str | None = None
) -> None: ...
def link_info(*, netns: str, ifname: str) -> tuple[int, str, int] | None: ...
def list_links(*, netns: str) -> list[str]: ...
def write_durable(
    *, data: bytes, target: str, spare: str | None = None, tmp: str | None = None
) -> None: ...

@final
class DurableWrite:
    def wait(self) -> None: ...

def start_durable_write(
    *, data: bytes, target: str, spare: str | None = None, tmp: str | None = None
) -> DurableWrite: ...

@final
class PluginProcess:
    @property
    def pid(self) -> int: ...
    @property
    def fed(self) -> int: ...
    def communicate(
        self, *, stdin: bytes, timeout: float | None, exit_grace: float, max_stdout: int
    ) -> tuple[Literal["exited", "timeout", "overflow"], int, bytes, bytes]: ...
    def feed(self, stdin: bytes) -> int: ...
    def kill(self) -> None: ...

@final
class StartingPlugin:
    def process(self) -> PluginProcess: ...

def start_plugin(
    *, path: str, env: list[tuple[str, str]], root_fd: int | None = None
) -> StartingPlugin: ...
def spawn_plugin(
    *,
    path: str,
    env: list[tuple[str, str]],
    netns_fd: int | None = None,
    root_fd: int | None = None,
    stdin: bytes | None = None,
) -> PluginProcess: ...
def run_sequence(
    *,
    steps: list[tuple[str, list[tuple[str, str]], bytes, int]],
    timeout: float | None,
    exit_grace: float,
    max_stdout: int,
    netns_fd: int | None = None,
    root_fd: int | None = None,
) -> list[
    tuple[
        Literal["exited", "timeout", "overflow", "io", "spawn", "skipped"],
        int,
        bytes,
        bytes,
        float,
    ]
]: ...
def teardown_order(*, positions: Sequence[int]) -> list[int]: ...
def del_failed(*, name: str, code: int, msg: str, details: str) -> tuple[int, str, str]: ...
def device_info_dirs(*, data: bytes, container_id: str, device_info_dir: str) -> list[str]: ...
def remove_device_info_dir(*, directory: str, above: str | None = None) -> None: ...
def decode_record(
    *, data: bytes, container_id: str
) -> tuple[bytes | None, tuple[int, str, str, bytes, bool] | None]: ...
def record_container(*, data: bytes) -> str | None: ...
def merge_capability_args(*, runtime: bytes, own: bytes) -> bytes: ...
def split_capability_args(*, runtime: bytes, entries: list[bytes]) -> tuple[bytes, list[bytes]]: ...

# The shim's trusted paths (braid_wire::trust).
def trusted_paths(
    *, socket_dir: str, cni_dir: str, bin_dir: str, readiness_file: str, node_file: str
) -> tuple[str, str, str, str]: ...
def check_closed_path(*, key: str, path: str) -> None: ...
