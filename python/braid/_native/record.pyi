# Hand-written stub of braid._native.record, the attachment record of braid_cni::record:
# decoding it, its container and its capability arguments.
# Checked against the built module by mypy.stubtest (make lint).

__all__ = [
    "RECORD_KIND",
    "RECORD_VERSION",
    "decode_record",
    "merge_capability_args",
    "record_container",
    "split_capability_args",
]

RECORD_KIND: str
RECORD_VERSION: int

def decode_record(
    *, data: bytes, container_id: str
) -> tuple[bytes | None, tuple[int, str, str, bytes, bool] | None]: ...
def record_container(*, data: bytes) -> str | None: ...
def merge_capability_args(*, runtime: bytes, own: bytes) -> bytes: ...
def split_capability_args(*, runtime: bytes, entries: list[bytes]) -> tuple[bytes, list[bytes]]: ...
