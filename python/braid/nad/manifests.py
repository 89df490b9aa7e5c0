"""Reading Kubernetes manifests (NetworkAttachmentDefinitions and pods) from YAML or JSON files.

Every problem is a CNI error 7 naming the file, the document and the field; never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.syntax import is_dns1123_subdomain

if TYPE_CHECKING:
    import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
NAD_KIND = "NetworkAttachmentDefinition"
POD_KIND = "Pod"


class NetworkAttachmentDefinition(msgspec.Struct, frozen=True):
    """A NAD: its key, ``spec.config`` (None when absent or empty), annotations, and where it
    came from (for messages)."""

    namespace: str
    name: str
    config: str | None = None
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    source: str = ""


class PodManifest(msgspec.Struct, frozen=True):
    """The parts of a pod braid reads."""

    namespace: str
    name: str
    uid: str = ""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    source: str = ""


def _fail(where: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"{where}: {msg}")


class FileBound(msgspec.Struct, frozen=True):
    """The most bytes read from one manifest file, and what a refusal says to do."""

    max_bytes: int
    advice: str


NAD_FILES = (
    "a NAD file (braid configuration key `maxNadFileBytes`): split it into smaller files, or "
    "raise the key"
)
POD_FILES = "a pod manifest file: split it into smaller files"
DEFAULT_FILE_BOUND = FileBound(1 << 20, NAD_FILES)


def yaml_loader() -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """PyYAML's libyaml loader, an order of magnitude faster than the pure Python one, which
    is the fallback only where PyYAML was built without libyaml. Both build the same objects
    (``SafeConstructor``): plain data, no Python tags. PyYAML is imported here, for YAML
    files only: JSON manifests, and ``braid-thin`` calls that read none, do without it."""
    import yaml  # noqa: PLC0415

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bounded(path: str | os.PathLike[str], bound: FileBound) -> str:
    """The file's text; more than ``bound.max_bytes`` is refused without reading the rest."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            data = file.read(bound.max_bytes + 1)
    except OSError as exc:
        raise _fail(str(path), f"cannot be read: {exc}") from None
    if len(data) > bound.max_bytes:
        raise _fail(
            str(path),
            f"more than {bound.max_bytes} bytes, the most braid reads from {bound.advice}",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(str(path), f"cannot be read: {exc}") from None


def _load_documents(path: str, bound: FileBound) -> list[Any]:
    text = read_bounded(path, bound)
    if os.path.splitext(path)[1] == ".json":
        try:  # JSON as braid reads it everywhere (RFC 8259: no NaN, no lone surrogate)
            return [msgspec.json.decode(text)]
        except (ValueError, RecursionError) as exc:
            raise _fail(str(path), f"not valid JSON: {exc}") from None
    loader = yaml_loader()  # a safe loader, C or Python
    import yaml  # noqa: PLC0415 - imported by yaml_loader already

    try:
        _refuse_aliases(yaml.parse(text, Loader=loader), str(path))
        return list(yaml.load_all(text, Loader=loader))
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        raise _fail(str(path), f"not valid YAML: {exc}") from None


def _refuse_aliases(events: Iterable[Any], where: str) -> None:
    """Refuses a YAML anchor or alias (``&a``, ``*a``, the ``<<`` merge): loaded, an alias
    is the anchored node again, so a few hundred bytes of nested aliases stand for gigabytes
    once a ``spec.config`` mapping is written out as JSON. Seen in the parser's events, before
    any object is built."""
    import yaml  # noqa: PLC0415 - imported by yaml_loader already

    for event in events:
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _fail(
                where,
                "uses a YAML anchor or alias (&name, *name, <<), which braid refuses in "
                "manifests: each could stand for any amount of data; write the values out",
            )


def _expand(doc: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Objects of a document: itself, each element of a JSON array, or the items of a List."""
    if doc is None:
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _expand(item, f"{where}[{i}]")
        return
    if not isinstance(doc, dict):
        raise _fail(where, f"expected a mapping, found {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items")
        if not isinstance(items, list):
            raise _fail(where, "field items: expected a list")
        yield from _expand(items, f"{where} items")
        return
    yield where, doc


def manifest_objects(
    path: str | os.PathLike[str], bound: FileBound = DEFAULT_FILE_BOUND
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(location, object) for every object in a manifest file of at most ``bound`` bytes;
    location names file and doc."""
    path = os.fspath(path)
    docs = _load_documents(path, bound)
    for i, doc in enumerate(docs):
        where = f"{path} document {i + 1}" if len(docs) > 1 else str(path)
        yield from _expand(doc, where)


def manifest_files(directory: str | os.PathLike[str]) -> list[str]:
    """The manifest files of a directory, sorted; a missing directory has none."""
    if not os.path.isdir(directory):
        return []
    paths = (os.path.join(directory, name) for name in os.listdir(directory))
    return sorted(
        p for p in paths if os.path.splitext(p)[1] in MANIFEST_SUFFIXES and os.path.isfile(p)
    )


Problems = list[tuple[str, str]]  # (field, what is wrong with it)


def _shown(value: Any) -> str:
    """A value of a manifest for a message: its ``repr``, or what it is when that cannot be
    written (YAML reads ``0x...`` integers of any length, past Python's limit on printing
    one)."""
    try:
        return repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__} too large to show"


API_VERSIONS = {NAD_KIND: "k8s.cni.cncf.io/v1", POD_KIND: "v1"}


def _name_problems(meta: dict[str, Any], problems: Problems) -> None:
    name = meta.get("name")
    if not isinstance(name, str) or not is_dns1123_subdomain(name):
        problems.append(("metadata.name", f"{_shown(name)} is not a valid DNS-1123 name"))
    namespace = meta.get("namespace", "default")
    if not isinstance(namespace, str) or not is_dns1123_subdomain(namespace):
        problems.append(("metadata.namespace", f"{_shown(namespace)} is not a valid namespace"))
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in annotations.items()
    ):
        problems.append(("metadata.annotations", "expected a map of strings to strings"))


def _spec_problems(obj: dict[str, Any], problems: Problems) -> None:
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        problems.append(("spec", "expected a mapping"))
        return
    config = (spec or {}).get("config")
    if config not in (None, "") and not isinstance(config, (str, dict)):
        problems.append(("spec.config", "expected a string holding CNI JSON"))
    elif isinstance(config, dict):
        try:  # YAML has values JSON has not: dates, binary, NaN
            _mapping_json(config)
        except (TypeError, ValueError, RecursionError) as exc:
            problems.append(("spec.config", f"a mapping that cannot be written as JSON: {exc}"))


def _mapping_json(config: dict[str, Any]) -> str:
    import json  # noqa: PLC0415 - a YAML mapping's config only; not on a JSON file's path

    return json.dumps(config, allow_nan=False)


def object_problems(obj: dict[str, Any], kind: str) -> Problems:
    """Every problem of a NAD's or a pod's fields that braid reads, each with its field: what
    ``nad_from_object`` and ``pod_from_object`` refuse (they raise the first)."""
    problems: Problems = []
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        _name_problems(meta, problems)
    else:
        problems.append(("metadata", "expected a mapping"))
        meta = {}
    if kind == POD_KIND and not isinstance(meta.get("uid", ""), str):
        problems.append(("metadata.uid", "expected a string"))
    if kind == NAD_KIND:
        _spec_problems(obj, problems)
    return problems


def api_version_problem(obj: dict[str, Any], kind: str) -> str | None:
    """What is wrong with the object's ``apiVersion`` for its kind (None: nothing). Checked by
    ``braidctl validate`` only: the API server sets it, and the file store reads by kind."""
    expected = API_VERSIONS.get(kind)
    found = obj.get("apiVersion")
    if expected is None or found == expected:
        return None
    return f"{_shown(found)} is not {expected!r}, the apiVersion of a {kind}"


def _checked(obj: dict[str, Any], where: str, kind: str) -> dict[str, Any]:
    """The object's metadata, once ``object_problems`` finds nothing (else its first problem)."""
    problems = object_problems(obj, kind)
    if problems:
        field, problem = problems[0]
        raise _fail(where, f"field {field}: {problem}")
    meta: dict[str, Any] = obj["metadata"]
    return meta


def spec_config(obj: dict[str, Any]) -> str | None:
    """``spec.config`` as CNI JSON text (None when absent or empty), of an object whose
    ``spec`` and ``spec.config`` ``object_problems`` found nothing wrong with."""
    config = (obj.get("spec") or {}).get("config")
    if config is None or config == "":
        return None
    if isinstance(config, dict):
        # The spec's own examples write the config as a YAML flow mapping; accept it.
        return _mapping_json(config)
    return str(config)


def nad_from_object(obj: dict[str, Any], where: str) -> NetworkAttachmentDefinition:
    """A NAD from a decoded manifest object (its ``kind`` already checked by the caller)."""
    meta = _checked(obj, where, NAD_KIND)
    return NetworkAttachmentDefinition(
        namespace=meta.get("namespace", "default"),
        name=meta["name"],
        config=spec_config(obj),
        annotations=meta.get("annotations") or {},
        source=where,
    )


def pod_from_object(obj: dict[str, Any], where: str) -> PodManifest:
    """A pod from a decoded manifest object."""
    meta = _checked(obj, where, POD_KIND)
    return PodManifest(
        namespace=meta.get("namespace", "default"),
        name=meta["name"],
        uid=meta.get("uid", ""),
        annotations=meta.get("annotations") or {},
        source=where,
    )


def object_kind(obj: dict[str, Any], where: str) -> str:
    """The object's ``kind``; a missing or non-string kind is an error."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise _fail(where, "field kind: missing")
    return kind
