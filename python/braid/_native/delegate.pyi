# Hand-written stub of braid._native.delegate, answered by braid_delegate: plugin lookup,
# environment, exit judging, the result cache, locks, spares, device info, teardown, durable
# writes and the shim's trusted settings.
# Checked against the built module by mypy.stubtest (make lint).

from collections.abc import Sequence
from typing import Literal, final

__all__ = [
    "CACHE_KIND",
    "EXIT_GRACE_SECONDS",
    "GC_LOCK_NAME",
    "MAX_CACHE_ENTRY_BYTES",
    "MAX_STDOUT_BYTES",
    "NODE_FILE_NAME",
    "NODE_PATH_KEYS",
    "SPARE_SIZE",
    "SPARE_SUFFIX",
    "VERSION_STDIN",
    "DurableWrite",
    "HeldLock",
    "cache_entry_path",
    "cached_result",
    "check_closed_path",
    "container_lock_name",
    "del_failed",
    "del_stdins",
    "device_info_dirs",
    "discover_spares",
    "find_plugin",
    "is_meta_plugin",
    "is_plain_plugin_type",
    "judge_exit",
    "lock_container",
    "lock_gc",
    "no_output_error",
    "plugin_env",
    "plugin_search_dirs",
    "remove_device_info_dir",
    "shim_settings",
    "spare_held",
    "start_durable_write",
    "supported_versions",
    "teardown_order",
    "trusted_paths",
    "version_at_least",
    "version_env",
    "write_durable",
]

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
def write_durable(
    *, data: bytes, target: str, spare: str | None = None, tmp: str | None = None
) -> None: ...

@final
class DurableWrite:
    def wait(self) -> None: ...

def start_durable_write(
    *, data: bytes, target: str, spare: str | None = None, tmp: str | None = None
) -> DurableWrite: ...
def teardown_order(*, positions: Sequence[int]) -> list[int]: ...
def del_failed(*, name: str, code: int, msg: str, details: str) -> tuple[int, str, str]: ...
def device_info_dirs(*, data: bytes, container_id: str, device_info_dir: str) -> list[str]: ...
def remove_device_info_dir(*, directory: str, above: str | None = None) -> None: ...
def trusted_paths(
    *, socket_dir: str, cni_dir: str, bin_dir: str, readiness_file: str, node_file: str
) -> tuple[str, str, str, str]: ...
def check_closed_path(*, key: str, path: str) -> None: ...
