"""The daemon's configuration file: the policy of every call, followed as it changes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from braid.config.schema import load_braid_config
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.operator_config import CHECK_SECONDS, OperatorConfig
from braid.errors import CniError

RUNTIME = load_braid_config(
    b'{"cniVersion": "1.0.0", "name": "n", "type": "braid", "cniDir": "/var/lib/x"}'
).config


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def write(path: Path, **keys: object) -> None:
    # A ConfigMap update: a new file renamed over the old one.
    fresh = path.with_suffix(".new")
    fresh.write_text(json.dumps({"type": "braid", **keys}))
    fresh.replace(path)


def test_a_changed_file_applies_to_the_calls_after_it(tmp_path: Path) -> None:
    path = tmp_path / "braid.conf"
    write(path, namespaceIsolation=False)
    clock = Clock()
    seen: list[str] = []
    operator = OperatorConfig(str(path), clock=clock, on_reload=seen.append)
    assert operator.apply(RUNTIME).namespace_isolation is False
    write(path, namespaceIsolation=True, logLevel="debug")
    assert operator.apply(RUNTIME).namespace_isolation is False, "looked at once a second"
    clock.now += CHECK_SECONDS
    config = operator.apply(RUNTIME)
    assert config.namespace_isolation is True
    assert config.log_level == "debug"
    assert config.cni_dir == "/var/lib/x"
    assert seen == ["applied"]


def test_an_invalid_file_keeps_the_last_good_policy_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another test of this process may have configured the daemon's logging
    # (braid.daemon.logs: no propagation, braid's level): capture it where it logs.
    monkeypatch.setattr(logging.getLogger(DAEMON_LOGGER), "propagate", True)
    caplog.set_level(logging.INFO, logger=DAEMON_LOGGER)
    path = tmp_path / "braid.conf"
    write(path, namespaceIsolation=True)
    seen: list[str] = []
    operator = OperatorConfig(str(path), on_reload=seen.append)
    path.write_text('{"type": "braid", "namespaceIsolation": "yes"')
    assert operator.refresh() is False
    assert operator.refresh() is False
    assert operator.apply(RUNTIME).namespace_isolation is True
    assert seen == ["invalid"]
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1
    assert "is not valid" in errors[0]
    assert "the last good one stays in force" in errors[0]
    write(path, namespaceIsolation=False)
    assert operator.refresh() is True
    assert operator.apply(RUNTIME).namespace_isolation is False
    assert seen == ["invalid", "applied"]


def test_an_unreadable_or_invalid_file_at_start_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(CniError, match="cannot read the configuration") as raised:
        OperatorConfig(str(tmp_path / "missing.conf"))
    assert raised.value.code == 7
    (tmp_path / "bad.conf").write_text("[]")
    with pytest.raises(CniError):
        OperatorConfig(str(tmp_path / "bad.conf"))


def test_without_a_file_each_call_keeps_its_own_configuration() -> None:
    operator = OperatorConfig(None)
    assert operator.apply(RUNTIME) is RUNTIME
    assert operator.refresh() is False


def test_an_edit_in_place_of_the_same_size_is_seen(tmp_path: Path) -> None:
    # Within one tick of the file system's clock, size and timestamps stay the same.
    path = tmp_path / "braid.conf"
    path.write_text('{"type": "braid", "logLevel": "error"}')
    operator = OperatorConfig(str(path))
    path.write_text('{"type": "braid", "logLevel": "debug"}')
    assert operator.refresh() is True
    assert operator.apply(RUNTIME).log_level == "debug"


def test_a_file_too_large_is_refused_and_a_missing_one_keeps_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "braid.conf"
    path.write_text('{"type": "braid", "namespaceIsolation": true}')
    operator = OperatorConfig(str(path))
    path.unlink()  # between a ConfigMap's two versions
    assert operator.refresh() is False
    assert operator.apply(RUNTIME).namespace_isolation is True
    path.write_bytes(b" " * (2 << 20))
    with pytest.raises(CniError, match="larger than"):
        OperatorConfig(str(path))


NODE_DIRS = {"confDir": "/node/net.d", "binDir": "/node/bin"}


def test_the_node_directories_fill_what_the_file_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "braid.conf"
    write(path, namespaceIsolation=False)
    clock = Clock()
    operator = OperatorConfig(str(path), clock=clock, node_dirs=NODE_DIRS)
    runtime = load_braid_config(
        b'{"type": "braid", "confDir": "/stdin/net.d", "binDir": "/stdin/bin"}'
    ).config
    config = operator.apply(runtime)
    assert (config.conf_dir, config.bin_dir) == ("/node/net.d", "/node/bin"), "over stdin's"
    # A file that names one keeps it; the other still follows the node, also after a reload.
    write(path, binDir="/policy/bin")
    clock.now += CHECK_SECONDS
    config = operator.apply(runtime)
    assert (config.conf_dir, config.bin_dir) == ("/node/net.d", "/policy/bin")
    assert operator.loaded.config.bin_dir == "/policy/bin", "what the node file is written from"


def test_without_node_directories_stdin_keeps_its_own(tmp_path: Path) -> None:
    path = tmp_path / "braid.conf"
    write(path, namespaceIsolation=False)
    operator = OperatorConfig(str(path), node_dirs={"confDir": "", "binDir": ""})
    runtime = load_braid_config(b'{"type": "braid", "confDir": "/stdin/net.d"}').config
    assert operator.apply(runtime).conf_dir == "/stdin/net.d"
    assert OperatorConfig(None, node_dirs=NODE_DIRS).apply(runtime).conf_dir == "/node/net.d"
