"""Which container is a pod's, for hot-plug: found from the attachment records alone (the pod
cache knows pods, not their sandboxes)."""

from __future__ import annotations

import msgspec

from braid.engine.record import RecordStore
from braid.errors import CniError
from braid.nad.plan import PodRef

MAX_RECORD_BYTES = 4 << 20


def find_container(records: RecordStore, pod: PodRef) -> str | None:
    """The container whose record is ``pod``'s (its UID when given), the newest when several
    are (a sandbox recreated before the old one's DEL), or None."""
    try:
        names = [path.name for path in records.directory.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return None
    needle = msgspec.json.encode(pod.name)
    found: list[tuple[float, str]] = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = records.directory / name
        try:
            with path.open("rb") as source:
                data = source.read(MAX_RECORD_BYTES)
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if needle not in data:
            continue
        try:
            record = records.read(name[: -len(".json")])
        except CniError:
            continue
        if record is None or (record.pod_namespace, record.pod_name) != (pod.namespace, pod.name):
            continue
        if pod.uid and record.pod_uid and record.pod_uid != pod.uid:
            continue
        found.append((mtime, record.container_id))
    return max(found)[1] if found else None
