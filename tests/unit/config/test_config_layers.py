"""Each layer's typed part of braid's configuration: built from the flat document, every key
in exactly one part (or one of the call's own CNI keys), nothing renamed on the way."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
import pytest

from braid._native import delegate as native_delegate
from braid.config import BraidConfig, load_braid_config
from braid.config.keys import LAYERED
from braid.config.schema import KNOWN_KEYS, PATH_KEYS
from braid.config.trust import CHECKED

# Keys of the call itself (the CNI network and what the runtime passes with it), and the
# network choice: read by resolution, not a setting of one layer.
CALL_KEYS = {
    "cniVersion",
    "name",
    "type",
    "capabilities",
    "runtimeConfig",
    "args",
    "prevResult",
    "clusterNetwork",
    "defaultNetworks",
    "delegates",
}


def _parts(config: BraidConfig) -> dict[str, msgspec.Struct]:
    return {
        "engine": config.engine,
        "daemon": config.daemon,
        "kubernetes": config.kubernetes,
        "logging": config.logging,
    }


def test_each_layer_reads_its_keys() -> None:
    doc = {
        "cniVersion": "1.0.0",
        "name": "braid",
        "type": "braid",
        "cniDir": "/x/cni",
        "nadDir": "/x/nads",
        "maxSelections": 3,
        "pluginTimeout": 2.5,
        "namespaceIsolation": True,
        "podResourcesTimeout": 1.5,
        "daemonQueueSize": 7,
        "hotPlug": "annotated",
        "hotPlugNamespaces": ["a"],
        "kubeconfig": "/x/kubeconfig",
        "statusWritePolicy": "fail",
        "globalNamespaces": "a, b",
        "logFile": "/x/log",
        "logLevel": "debug",
        "logOptions": {"maxAge": 9},
    }
    config = load_braid_config(json.dumps(doc).encode()).config
    engine = config.engine
    assert (engine.dirs.cni_dir, engine.dirs.nad_dir) == ("/x/cni", "/x/nads")
    assert (engine.bounds.max_selections, engine.bounds.plugin_timeout) == (3, 2.5)
    assert engine.policy.namespace_isolation is True
    assert engine.devices.pod_resources_timeout == 1.5
    daemon = config.daemon
    assert (daemon.queue_size, daemon.hot_plug, daemon.hot_plug_namespaces) == (
        7,
        "annotated",
        ("a",),
    )
    kube = config.kubernetes
    assert (kube.kubeconfig, kube.status_write_policy) == ("/x/kubeconfig", "fail")
    assert kube.global_namespace_set() == frozenset({"a", "b"})
    logging = config.logging
    assert (logging.file, logging.level, logging.options.max_age) == ("/x/log", "debug", 9)


def test_every_key_belongs_to_one_layer() -> None:
    """A key added to the schema without a layer reading it fails here: changing any one
    setting changes exactly one layer's part."""
    fields = msgspec.structs.fields(BraidConfig)
    assert {f.encode_name for f in fields} == KNOWN_KEYS
    config = BraidConfig()
    before = _parts(config)
    for index, field in enumerate(fields):
        if field.encode_name in CALL_KEYS:
            continue
        default = getattr(config, field.name)
        marker: object
        if isinstance(default, bool):
            marker = not default
        elif isinstance(default, float) or field.name == "plugin_timeout":
            marker = 1000.0 + index
        elif isinstance(default, int):
            marker = 1000 + index
        elif isinstance(default, str) or field.name == "global_namespaces":
            marker = f"marker{index}"
        elif field.name in {"hot_plug_namespaces", "system_namespaces"}:
            marker = [f"ns{index}"]
        elif field.name == "log_options":
            marker = msgspec.structs.replace(default, max_age=1000 + index)
        else:  # pragma: no cover - a new kind of key: say which
            raise AssertionError(f"no marker for {field.name}")
        after = _parts(msgspec.structs.replace(config, **{field.name: marker}))
        changed = [name for name in before if before[name] != after[name]]
        assert len(changed) == 1, (field.encode_name, changed)


def test_loading_the_configuration_loads_no_other_layer() -> None:
    """`braid.config` in a fresh interpreter: nothing of braid but errors and _native (the
    package `braid` itself aside)."""
    code = (
        "import json, sys\n"
        "import braid.config\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('braid'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    native = {m for m in loaded if m == "braid._native" or m.startswith("braid._native.")}
    assert loaded - {"braid", "braid.errors"} - native == {
        "braid.config",
        "braid.config.document",
        "braid.config.keys",
        "braid.config.layers",
        "braid.config.schema",
    }


def test_each_view_is_built_once_per_configuration() -> None:
    """Read per CNI call (the engine, its session): the same view object every time, with the
    configuration's values, kept out of the document (not encoded, not compared)."""
    doc = b'{"type": "braid", "cniDir": "/x/cni", "logLevel": "debug", "hotPlug": "all"}'
    config = load_braid_config(doc).config
    encoded = msgspec.json.encode(config)
    first = _parts(config)
    assert _parts(config) == first
    for name, view in _parts(config).items():
        assert view is first[name], name
    assert config.engine.dirs.cni_dir == "/x/cni"
    assert config.logging.level == "debug"
    assert config.daemon.hot_plug == "all"
    assert msgspec.json.encode(config) == encoded
    assert config == load_braid_config(doc).config


def test_a_changed_configuration_has_views_of_its_own() -> None:
    """The configuration is frozen: a change is a new instance (the daemon's policy overlay,
    the host-root localizer) whose views carry its values, not the views read before."""
    config = BraidConfig(cni_dir="/x/old", max_selections=3, log_level="debug")
    engine = config.engine
    changed = msgspec.structs.replace(config, cni_dir="/x/new", max_selections=4)
    assert changed.engine.dirs.cni_dir == "/x/new"
    assert changed.engine.bounds.max_selections == 4
    assert changed.logging.level == "debug"
    with pytest.raises(AttributeError):
        config.cni_dir = "/x/other"  # type: ignore[misc]
    assert config.engine is engine
    assert engine.dirs.cni_dir == "/x/old"


def test_the_node_files_keys_are_declared_paths_with_the_shims_defaults() -> None:
    """The shim declares the node file's keys (braid_wire::trust); each is a path key of the
    views with the same default, which the trust rule checks (``braid.config.trust``)."""
    declared = {k.key: k for k in LAYERED}
    for key, default in native_delegate.NODE_PATH_KEYS:
        assert declared[key].path, key
        assert declared[key].default == default, key
    assert {key for _, key in CHECKED} == {k for k, _ in native_delegate.NODE_PATH_KEYS} - {
        "daemonSocketDir"
    }


def test_path_kinds_come_from_the_declaration() -> None:
    """Paths named through the node's root, and those handed on as the node's."""
    kinds = {k.key: k.path for k in LAYERED if k.path}
    assert {k for k, kind in kinds.items() if kind == "node"} == {
        "binDir",
        "podResourcesSocket",
        "deviceInfoDir",
    }
    assert {key for _, key in PATH_KEYS} == set(kinds)
