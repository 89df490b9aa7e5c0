"""The store seam: where NetworkAttachmentDefinitions and pod annotations come from.

``FileStore`` is braid's embedded default (manifests in ``nadDir`` and ``podDir``); the
Kubernetes store implements the same ``Store`` protocol.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import os
import stat
import time
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.devices import KubeletReader
from braid.nad.manifests import (
    DEFAULT_FILE_BOUND,
    MANIFEST_SUFFIXES,
    NAD_FILES,
    NAD_KIND,
    POD_FILES,
    POD_KIND,
    FileBound,
    NetworkAttachmentDefinition,
    PodManifest,
    manifest_files,
    manifest_objects,
    nad_from_object,
    object_kind,
    pod_from_object,
)
from braid.nad.parsed import RACY_SECONDS, ParsedFiles

POD_ANNOTATIONS_CAPABILITY = "io.kubernetes.cri.pod-annotations"


class Store(Protocol):
    """NAD and pod lookups. ``None`` means "no such object"; other failures raise CniError."""

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        """The NAD ``namespace/name``."""
        ...

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        """The pod's annotations. The UID check is the Kubernetes store's business."""
        ...


_Manifest = TypeVar("_Manifest", NetworkAttachmentDefinition, PodManifest)


class _Found(dict[tuple[str, str], _Manifest]):
    """The objects of a directory plus the problems met reading it: files that do not parse
    (their error) and names defined twice (ambiguous). A lookup of a name found whole and
    unambiguous succeeds whatever else is broken; a miss reports the problems, since the name
    may sit in a broken file."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[CniError] = []
        self.ambiguous: dict[tuple[str, str], CniError] = {}

    def lookup(self, key: tuple[str, str]) -> _Manifest | None:
        if key in self.ambiguous:
            raise self.ambiguous[key]
        found = self.get(key)
        if found is None and self.problems:
            first = self.problems[0]
            more = len(self.problems) - 1
            details = f"{more} more problem(s) in the directory" if more else first.details
            raise CniError(first.code, first.msg, details)
        return found

    def check(self) -> None:
        """Raises the first problem, if any (for listings that must be whole)."""
        if self.problems:
            raise self.problems[0]


def _index(found: _Found[_Manifest], item: _Manifest, what: str) -> None:
    key = (item.namespace, item.name)
    if key in found:
        error = CniError(
            INVALID_CONFIG,
            f"{what} {item.namespace}/{item.name} is defined twice: in {found[key].source} "
            f"and in {item.source}",
        )
        found.ambiguous[key] = error
        found.problems.append(error)
        return
    found[key] = item


POD_FILE_BOUND = FileBound(1 << 20, POD_FILES)


def _read_kind(
    directory: str | None,
    kind: str,
    make: Callable[[dict[str, Any], str], _Manifest],
    what: str,
    *,
    bound: FileBound,
    parsed: ParsedFiles[_Manifest],
) -> _Found[_Manifest]:
    """Every object of ``kind`` in the directory's manifest files, each file parsed once per
    version (``parsed``); a file that cannot be read, or is larger than ``bound``, is recorded
    as a problem and the other files are still read."""

    def parse(path: str) -> list[_Manifest]:
        return [
            make(obj, where)
            for where, obj in manifest_objects(path, bound)
            if object_kind(obj, where) == kind
        ]

    found: _Found[_Manifest] = _Found()
    for path in manifest_files(directory) if directory is not None else []:
        try:
            items = parsed.items(path, bound, parse)
        except CniError as exc:
            found.problems.append(exc)
            continue
        for item in items:
            _index(found, item, what)
    return found


# Each version of a manifest file parsed once, whatever store reads it (bounded).
_PARSED_NADS: ParsedFiles[NetworkAttachmentDefinition] = ParsedFiles()
_PARSED_PODS: ParsedFiles[PodManifest] = ParsedFiles()

Stamp = tuple[tuple[str, int, int, int, int], ...]


def directory_stamp(directory: str | os.PathLike[str] | None) -> Stamp:
    """What identifies the manifest files of ``directory`` as they are now: for each file
    (symlinks followed, as a ConfigMap mount needs) its name, device, inode, size and mtime.
    The same files as ``manifest_files``, from one directory scan and one ``stat`` each."""
    if directory is None:
        return ()
    found = []
    try:
        with os.scandir(directory) as scan:
            entries = [e for e in scan if e.name.endswith(MANIFEST_SUFFIXES)]
    except OSError:  # missing, not a directory, unreadable: no files to read either
        return ()
    for entry in entries:
        try:
            st = entry.stat()  # follows symlinks
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((entry.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    found.sort()
    return tuple(found)


Reader = Callable[[str | None, FileBound], "_Found[_Manifest]"]


class _Snapshot(Generic[_Manifest]):
    """The objects of one directory, read once (and again under another bound); with
    ``revalidate`` re-read when its files changed (the daemon's long-lived stores)."""

    def __init__(self, directory: str | None, read: Reader[_Manifest], *, revalidate: bool) -> None:
        self.directory = directory
        self.read: Reader[_Manifest] = read
        self.revalidate = revalidate
        self._held: tuple[Stamp, FileBound, _Found[_Manifest]] | None = None

    def get(self, bound: FileBound) -> _Found[_Manifest]:
        held = self._held if self._held is not None and self._held[1] == bound else None
        if held is not None and not self.revalidate:
            return held[2]
        stamp = directory_stamp(self.directory) if self.revalidate else ()
        if held is not None and held[0] == stamp:
            return held[2]
        read_at = time.time_ns()
        found = self.read(self.directory, bound)
        newest = max((entry[4] for entry in stamp), default=0)
        if not self.revalidate or newest < read_at - int(RACY_SECONDS * 1e9):
            self._held = (stamp, bound, found)
        return found


def _read_nads(directory: str | None, bound: FileBound) -> _Found[NetworkAttachmentDefinition]:
    what = "NetworkAttachmentDefinition"
    return _read_kind(directory, NAD_KIND, nad_from_object, what, bound=bound, parsed=_PARSED_NADS)


def _read_pods(directory: str | None, bound: FileBound) -> _Found[PodManifest]:
    return _read_kind(directory, POD_KIND, pod_from_object, "pod", bound=bound, parsed=_PARSED_PODS)


class FileStore:
    """NADs from every ``*.yaml``/``*.yml``/``*.json`` in ``nad_dir`` (several documents per
    file; objects of other kinds are skipped), pods likewise from ``pod_dir``. File names do not
    matter; objects are keyed by ``metadata.namespace`` (default ``default``) and ``name``.

    Files are read once, on first use. With ``revalidate`` (a store kept across requests, see
    ``FileStores``) each lookup first compares the files' stamps (one ``stat`` per file) and
    reads the directory again when any file was added, removed, replaced or changed.

    A file over 1 MiB is not parsed: it is a problem of its directory (a NAD file's bound is
    ``maxNadFileBytes``, which ``limited`` sets, as resolution does)."""

    def __init__(
        self,
        nad_dir: str | os.PathLike[str],
        pod_dir: str | os.PathLike[str] | None = None,
        *,
        revalidate: bool = False,
    ) -> None:
        self.nad_dir = os.fspath(nad_dir)
        self.pod_dir = os.fspath(pod_dir) if pod_dir is not None else None
        self._nads: _Source[NetworkAttachmentDefinition] = _Snapshot(
            self.nad_dir, _read_nads, revalidate=revalidate
        )
        self._pods: _Source[PodManifest] = _Snapshot(
            self.pod_dir, _read_pods, revalidate=revalidate
        )
        self.nad_bound = DEFAULT_FILE_BOUND

    def limited(self, max_file_bytes: int) -> FileStore:
        """This store reading NAD files of at most ``max_file_bytes`` (``maxNadFileBytes``);
        the objects already read are shared, those read under another bound are not."""
        if max_file_bytes == self.nad_bound.max_bytes:
            return self
        view = self._view()
        view.nad_bound = FileBound(max_file_bytes, NAD_FILES)
        return view

    def pinned(self) -> FileStore:
        """This store as one request sees it: with ``revalidate``, each directory's files are
        checked (one ``stat`` each) on the request's first lookup only, not on every lookup
        (an ADD looks up the cluster network and every selected NAD)."""
        view = self._view()
        view._nads = _Pinned(self._nads)
        view._pods = _Pinned(self._pods)
        return view

    def _view(self) -> FileStore:
        """A shallow copy (``copy.copy``'s, without importing ``copy`` on braid-thin's path)."""
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        return view

    def nads(self) -> dict[tuple[str, str], NetworkAttachmentDefinition]:
        """Every NAD of ``nad_dir`` by (namespace, name); any broken file is an error."""
        found = self._nads.get(self.nad_bound)
        found.check()
        return found

    def pods(self) -> dict[tuple[str, str], PodManifest]:
        """Every pod manifest of ``pod_dir`` by (namespace, name); any broken file is an error."""
        found = self._pods.get(POD_FILE_BOUND)
        found.check()
        return found

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        """The NAD; a broken file elsewhere in ``nad_dir`` fails only lookups it may hide."""
        return self._nads.get(self.nad_bound).lookup((namespace, name))

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        del uid  # file manifests rarely carry one; only the Kubernetes store checks it
        pod = self._pods.get(POD_FILE_BOUND).lookup((namespace, name))
        return None if pod is None else pod.annotations


class _Source(Protocol[_Manifest]):
    def get(self, bound: FileBound) -> _Found[_Manifest]: ...


class _Pinned(Generic[_Manifest]):
    """A snapshot's objects for one request: checked (and read again if changed) on the first
    lookup only; every later lookup of the request under the same bound sees the same
    objects."""

    def __init__(self, snapshot: _Source[_Manifest]) -> None:
        self._snapshot: _Source[_Manifest] = snapshot
        self._found: dict[FileBound, _Found[_Manifest]] = {}

    def get(self, bound: FileBound) -> _Found[_Manifest]:
        found = self._found.get(bound)
        if found is None:
            found = self._found[bound] = self._snapshot.get(bound)
        return found


class FileStores:
    """Revalidating file stores kept across requests, one per (``nadDir``, ``podDir``): the
    daemon's, so a request parses NAD files only when they changed."""

    def __init__(self) -> None:
        self._stores: dict[tuple[str, str | None], FileStore] = {}
        self._lock = _thread.allocate_lock()

    def get(self, nad_dir: str, pod_dir: str | None) -> FileStore:
        with self._lock:
            store = self._stores.get((nad_dir, pod_dir))
            if store is None:
                store = FileStore(nad_dir, pod_dir, revalidate=True)
                self._stores[(nad_dir, pod_dir)] = store
            return store


class LocalSession:
    """A call's session (``braid.engine.session.Session``) without Kubernetes: a store (the
    file store, or any other), no status publisher, nothing to report, nothing to close;
    ``kubelet``: how devices are asked of kubelet (None: not at all)."""

    publisher = None

    def __init__(self, store: Store, kubelet: KubeletReader | None = None) -> None:
        self.store = store
        self.kubelet = kubelet

    def add_failed(self, pod: object, error: CniError) -> None:
        """Nothing: without Kubernetes a failed ADD has no event to post."""

    def close(self) -> None:
        """Nothing to release."""


def pod_annotations(
    capability_args: Mapping[str, Any], store: Store | None, namespace: str, name: str, uid: str
) -> dict[str, str]:
    """The pod's annotations: from the runtime's ``io.kubernetes.cri.pod-annotations``
    capability argument when sent (JSON null means none), else from the store; a pod the store
    does not know, or no pod name at all, has none."""
    if POD_ANNOTATIONS_CAPABILITY in capability_args:
        value = capability_args[POD_ANNOTATIONS_CAPABILITY]
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise CniError(
                INVALID_CONFIG,
                f"runtimeConfig {POD_ANNOTATIONS_CAPABILITY!r} must be a map of strings",
            )
        return dict(value)
    if store is None or not name:
        return {}
    found = store.get_pod(namespace, name, uid)
    return {} if found is None else dict(found)
