#!/usr/bin/env python3
"""Fuzz target: pod and NAD objects as the daemon's caches take them from the API server's
watch and LIST (``braid.k8s.informers``, ``braid.k8s.listing``, ``braid.k8s.caches``,
``braid.k8s.objects``), and the network-status annotation braid reads back from a pod
(``braid.daemon.hotplug_report``, ``braid.k8s.status``, ``braid.k8s.events``).

The input is one watch event line, and one LIST page. Properties: the event or page is applied,
or refused with the ``ApiError`` 11 of an answer that is not a Kubernetes object (``Gone`` for
a 410), never a traceback, which would end the watch's thread; the cache keeps an object under
its own namespace and name, and what it keeps reads as the object does (``pod_info``,
``nad_definition``: the same value or the same code-7 error); a NAD over ``maxNadBytes`` is
kept as a marker of its size only; a pod's network-status annotation read back is never an
error: it equals itself when it is JSON, and its interfaces, ips and count are strings and
counts.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

from typing import Any

import atheris
import msgspec
from fuzz_harness import main

with atheris.instrument_imports():
    from braid.daemon.hotplug_report import _same_status, _status_ips
    from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
    from braid.k8s.caches import SIZE_KEY, _trim_pod, nad_entry
    from braid.k8s.errors import ApiError
    from braid.k8s.events import _interfaces
    from braid.k8s.informers import Gone, Reflector
    from braid.k8s.objects import nad_definition, pod_info
    from braid.k8s.status import secondary_count
    from braid.nad.status import NETWORK_STATUS_ANNOTATION

MAX_NAD_BYTES = 512


def read(how: Any, obj: dict[str, Any], namespace: str, name: str) -> Any:
    """What ``how`` reads of ``obj``: its value, or the code and message of its refusal."""
    try:
        return how(obj, namespace, name)
    except CniError as exc:
        assert exc.code == INVALID_CONFIG, exc
        return (exc.code, exc.msg, exc.details)


def reflector(trim: Any) -> Reflector:
    return Reflector(None, "/fuzz", trim=trim)  # type: ignore[arg-type] # never asks a server


def apply(cache: Reflector, line: bytes) -> bool:
    """The event applied to ``cache``; False when it was refused, as the watch refuses it."""
    try:
        cache._apply(line)
    except Gone:
        return False
    except ApiError as exc:
        assert exc.code == TRY_AGAIN_LATER, exc
        assert exc.msg, exc
        return False
    return True


def check_status_annotation(value: Any) -> None:
    if not isinstance(value, str):
        return
    data = value.encode("utf-8", "surrogatepass")
    try:
        msgspec.json.decode(data)
        is_json = True
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        is_json = False
    assert _same_status(value, data) == is_json
    assert secondary_count(data) >= 0
    ips = _status_ips(data)
    assert all(isinstance(i, str) and all(isinstance(a, str) for a in v) for i, v in ips.items())
    for ifname, addresses, network in _interfaces(data):
        assert isinstance(ifname, str)
        assert isinstance(network, str)
        assert all(isinstance(a, str) for a in addresses)


def check_kept(cache: Reflector, event: Any, kept: bool, *, pods: bool) -> None:
    obj = event.get("object") if isinstance(event, dict) else None
    if not kept or not isinstance(obj, dict) or event.get("type") not in ("ADDED", "MODIFIED"):
        return
    entries = list(cache.items.items())
    assert len(entries) <= 1, entries
    for (namespace, name), entry in entries:
        meta = obj["metadata"]
        assert (namespace, name) == (meta.get("namespace", ""), meta["name"])
        if pods:
            assert read(pod_info, entry, namespace, name) == read(pod_info, obj, namespace, name)
            annotations = meta.get("annotations")
            if isinstance(annotations, dict):
                check_status_annotation(annotations.get(NETWORK_STATUS_ANNOTATION))
        elif SIZE_KEY in entry:
            assert entry[SIZE_KEY] > MAX_NAD_BYTES, entry
            assert set(entry) == {"metadata", SIZE_KEY}, entry
        else:
            got = read(nad_definition, entry, namespace, name)
            assert got == read(nad_definition, obj, namespace, name), got


class Lister:
    """The API server answering a LIST: ``page`` first, then an empty last page."""

    def __init__(self, page: bytes) -> None:
        self.pages = [page]

    def body(self, method: str, path: str, **_: Any) -> bytes:
        return self.pages.pop() if self.pages else b'{"metadata": {}, "items": []}'


def check_list(page: bytes) -> None:
    """The input as a LIST page: its objects are kept, or the LIST is refused with code 11."""
    cache = Reflector(Lister(page), "/api/v1/pods", trim=_trim_pod)  # type: ignore[arg-type]
    try:
        cache._list()
    except ApiError as exc:
        assert exc.code == TRY_AGAIN_LATER, exc
        return
    assert cache.synced.is_set()
    for (namespace, name), entry in cache.items.items():
        assert isinstance(namespace, str), namespace
        assert isinstance(name, str), name
        assert name, entry
        read(pod_info, entry, namespace, name)


def check(data: bytes) -> None:
    check_list(data)
    pods = reflector(_trim_pod)
    nads = reflector(lambda obj: nad_entry(obj, MAX_NAD_BYTES))
    kept = [apply(pods, data), apply(nads, data)]
    assert kept[0] == kept[1], "the two caches differ on one event"
    try:
        event = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        assert not kept[0], "an event that is not JSON was applied"
        return
    check_kept(pods, event, kept[0], pods=True)
    check_kept(nads, event, kept[1], pods=False)


if __name__ == "__main__":
    main(check)
