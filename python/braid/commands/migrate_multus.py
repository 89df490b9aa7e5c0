"""A Multus configuration made braid's: every key carried, changed or left out with its reason.

Input is hostile: it is bounded, must be one JSON object (or a ConfigMap, YAML or JSON, holding
one), and a value of the wrong type is reported and left out, never trusted. The keys and the
reasons live in ``braid.commands.multus_keys``.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

import msgspec

from braid.cni.versions import CNI_VERSIONS
from braid.commands.multus_keys import (
    CARRIED_BOOLS,
    CARRIED_STRING_LISTS,
    CARRIED_STRINGS,
    CONTAINER_HOST_PREFIX,
    DEPLOY_CNI_CONF_DIR,
    LOG_OPTION_COUNTS,
    MAYBE_PATH_KEYS,
    NOT_CARRIED,
    PATH_KEYS,
    POD_ANNOTATIONS_CAPABILITY,
    THICK_KEYS,
    THICK_TYPE,
    THIN_TYPE,
    UNKNOWN,
)
from braid.config.schema import LOG_LEVELS, BraidConfig
from braid.errors import INVALID_CONFIG, CniError

# braid's keys that are empty unless set: an empty Multus value means the same there.
_EMPTY_BY_DEFAULT = frozenset(
    f.encode_name for f in msgspec.structs.fields(BraidConfig) if f.default == ""
)
_CONTAINER_LOG = (
    "the thick daemon's log inside its own container: braid's daemon logs JSON lines to its "
    "stderr (kubectl logs), and logFile is written by braid-thin alone"
)
_TYPES = {str: "a string", bool: "true or false", list: "a list of strings"}


@dataclass
class Migration:
    """braid's configuration and what happened to each Multus key."""

    kind: str  # "thin" or "thick"
    config: dict[str, Any] = field(default_factory=dict)
    carried: list[str] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    not_carried: list[dict[str, Any]] = field(default_factory=list)
    prefixes: tuple[str, ...] = ()

    def carry(self, key: str, value: Any) -> None:
        self.config[key] = value
        self.carried.append(key)

    def change(self, key: str, was: Any, now: Any, reason: str) -> None:
        self.config[key] = now
        self.changed.append({"key": key, "multus": was, "braid": now, "reason": reason})

    def drop(self, key: str, value: Any, reason: str) -> None:
        self.not_carried.append({"key": key, "multus": value, "reason": reason})

    def as_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config,
            "carried": self.carried,
            "changed": self.changed,
            "notCarried": self.not_carried,
        }


def _node_path(migration: Migration, value: str) -> str:
    """A path of the thick daemon's container as the node names it."""
    for prefix in migration.prefixes:
        if value == prefix or value.startswith(f"{prefix}/"):
            return value[len(prefix) :] or "/"
    return value


def _path_value(migration: Migration, key: str, value: str) -> str:
    if key in PATH_KEYS or (key in MAYBE_PATH_KEYS and "/" in value):
        return _node_path(migration, value)
    return value


def _typed(migration: Migration, key: str, value: Any, wanted: type) -> bool:
    ok = isinstance(value, wanted)
    if isinstance(value, list):
        ok = ok and all(isinstance(item, str) for item in value)
    if not ok:
        migration.drop(key, value, f"must be {_TYPES[wanted]}, not {json.dumps(value)[:80]}")
    return ok


def _string(migration: Migration, key: str, value: Any) -> None:
    if not _typed(migration, key, value, str):
        return
    if key == "cniVersion" and value not in CNI_VERSIONS:
        versions = ", ".join(CNI_VERSIONS)
        migration.drop(key, value, f"braid cannot answer in it (it answers in {versions})")
        return
    if value == "" and key not in _EMPTY_BY_DEFAULT:
        migration.drop(key, value, "empty, which Multus reads as unset: braid's default applies")
        return
    now = _path_value(migration, key, value)
    if key == "logFile" and migration.prefixes and now == value:
        migration.drop(key, value, _CONTAINER_LOG)
    elif now != value:
        migration.change(key, value, now, "the thick daemon's container path, as the node names it")
    else:
        migration.carry(key, value)


def _string_list(migration: Migration, key: str, value: Any) -> None:
    if not _typed(migration, key, value, list):
        return
    now = [_path_value(migration, key, item) for item in value]
    if now != value:
        migration.change(
            key, value, now, "the thick daemon's container paths, as the node names them"
        )
    else:
        migration.carry(key, value)


def _log_level(migration: Migration, value: Any) -> None:
    if not _typed(migration, "logLevel", value, str):
        return
    level = value.lower()
    if level not in LOG_LEVELS:
        migration.drop("logLevel", value, f"not one of {', '.join(sorted(LOG_LEVELS))}")
    elif level != value:
        migration.change("logLevel", value, level, "Multus reads the level in any case")
    else:
        migration.carry("logLevel", value)


def _log_options(migration: Migration, value: Any) -> None:
    if not isinstance(value, dict):
        migration.drop("logOptions", value, "must be an object")
        return
    kept: dict[str, Any] = {}
    for key, option in value.items():
        name = f"logOptions.{key}"
        if key in LOG_OPTION_COUNTS:
            if isinstance(option, int) and not isinstance(option, bool) and option >= 0:
                kept[key] = option
            else:
                migration.drop(name, option, "must be an integer, 0 or more")
        elif key == "compress":
            if isinstance(option, bool):
                kept[key] = option
            else:
                migration.drop(name, option, "must be true or false")
        else:
            migration.drop(name, option, UNKNOWN)
    if kept:
        migration.carry("logOptions", kept)


def _capabilities(migration: Migration, value: Any) -> None:
    if not isinstance(value, dict):
        migration.drop("capabilities", value, "must be an object of capability names to booleans")
        return
    kept = {name: on for name, on in value.items() if isinstance(on, bool)}
    for name, on in value.items():
        if not isinstance(on, bool):
            migration.drop(f"capabilities.{name}", on, "must be true or false")
    if POD_ANNOTATIONS_CAPABILITY in kept:
        migration.carry("capabilities", kept)
        return
    now = {**kept, POD_ANNOTATIONS_CAPABILITY: True}
    migration.change(
        "capabilities",
        value,
        now,
        f"{POD_ANNOTATIONS_CAPABILITY} added: the runtime then sends the pod's annotations, so "
        "braid needs no lookup of the pod (as deploy/base declares)",
    )


def _delegates(migration: Migration, value: Any, doc: dict[str, Any]) -> None:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        migration.drop("delegates", value, "must be a list of CNI configurations")
        return
    if doc.get("clusterNetwork"):
        why = "Multus ignores delegates when clusterNetwork is set"
        migration.drop("delegates", value, why)
        return
    if value:
        migration.drop(
            "delegates[0]",
            value[0],
            "the node's default network inlined (Multus's generated configuration copies it): "
            "braid's daemon finds each node's default network itself, the first configuration "
            "of the node's CNI directory, and names it clusterNetwork",
        )
    for index, extra in enumerate(value[1:], start=1):
        migration.drop(
            f"delegates[{index}]",
            extra,
            "braid takes inline delegates only without clusterNetwork, which its daemon sets on "
            "every node: make it a NetworkAttachmentDefinition in multusNamespace and name it "
            "in defaultNetworks",
        )


def _type(migration: Migration, value: Any) -> None:
    if value not in (THIN_TYPE, THICK_TYPE, None):
        raise CniError(
            INVALID_CONFIG,
            f"not a Multus configuration: its type is {json.dumps(value)[:80]}, not "
            f"{THIN_TYPE!r} or {THICK_TYPE!r}",
        )
    if value is None:
        migration.config["type"] = "braid"
    else:
        migration.change("type", value, "braid", "braid's plugin type")


def _master_cni(migration: Migration, value: Any, doc: dict[str, Any]) -> None:
    """``multusMasterCNI``, the primary network's file name, becomes ``clusterNetwork``."""
    key = "multusMasterCNI"
    if not isinstance(value, str) or not value:
        migration.drop(key, value, "not a file name: braid's daemon takes the first configuration")
    elif doc.get("clusterNetwork"):
        migration.drop(key, value, "clusterNetwork is set, and names the default network")
    else:
        where = doc.get("multusAutoconfigDir") or doc.get("cniConfigDir")
        where = _node_path(migration, where) if isinstance(where, str) else ""
        path = _node_path(migration, posixpath.join(where or DEPLOY_CNI_CONF_DIR, value))
        migration.change("clusterNetwork", value, path, "the primary network's file, by path")


def _thick(migration: Migration, key: str, value: Any, doc: dict[str, Any]) -> None:
    if key == "multusMasterCNI":
        _master_cni(migration, value, doc)
        return
    reason = NOT_CARRIED[key]
    if key == "multusConfigFile" and value != "auto":
        reason = "a hand-written Multus configuration: run `braidctl migrate multus` on that file"
    if key in ("multusAutoconfigDir", "cniConfigDir") and isinstance(value, str):
        node = _node_path(migration, value).rstrip("/") or "/"
        if node != DEPLOY_CNI_CONF_DIR:
            reason += f"; set cniConfDir to {node} in braid's ConfigMap (braid-config)"
    migration.drop(key, value, reason)


def _key(migration: Migration, key: str, value: Any, doc: dict[str, Any]) -> None:
    if key in CARRIED_STRINGS:
        _string(migration, key, value)
    elif key in CARRIED_BOOLS:
        if _typed(migration, key, value, bool):
            migration.carry(key, value)
    elif key in CARRIED_STRING_LISTS:
        _string_list(migration, key, value)
    elif key == "logLevel":
        _log_level(migration, value)
    elif key == "logOptions":
        _log_options(migration, value)
    elif key == "capabilities":
        _capabilities(migration, value)
    elif key == "delegates":
        _delegates(migration, value, doc)
    elif key in THICK_KEYS:
        _thick(migration, key, value, doc)
    else:
        migration.drop(key, value, NOT_CARRIED.get(key, UNKNOWN))


def migrate(doc: dict[str, Any]) -> Migration:
    """braid's configuration from one Multus configuration object (a thin plugin conf, the
    thick daemon's configuration, or its generated shim conf)."""
    thick = doc.get("type") == THICK_TYPE or any(key in doc for key in THICK_KEYS)
    migration = Migration(kind="thick" if thick else "thin")
    if thick:
        chroot = doc.get("chrootDir")
        roots = [chroot] if isinstance(chroot, str) and chroot.strip("/") else []
        migration.prefixes = tuple(p.rstrip("/") for p in [*roots, CONTAINER_HOST_PREFIX])
    _type(migration, doc.get("type"))
    for key, value in doc.items():
        if key != "type":
            _key(migration, key, value, doc)
    if "capabilities" not in doc:
        migration.change(
            "capabilities", None, {POD_ANNOTATIONS_CAPABILITY: True}, "as deploy/base declares"
        )
    leading = ("cniVersion", "name", "type")
    first: dict[str, Any] = {k: migration.config.pop(k) for k in leading if k in migration.config}
    migration.config = {**first, **migration.config}
    return migration
