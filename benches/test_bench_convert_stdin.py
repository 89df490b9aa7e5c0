"""Per-call cost of result conversion and plugin-stdin building: the Rust core
(`braid._native.convert_result`, `plugin_stdin`) against straightforward pure Python
(`tests/fixtures/cni/convert/reference_convert.py`, `python_stdin.py`).

Both sides take and return bytes, as the runtime does. Each Python benchmark first checks that
both sides agree on the output (semantic JSON comparison), so a benchmark never times a wrong
answer. Target: < 20 µs per call for the Rust side (docs/performance.md).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from braid._native import cni as native_cni
from python_stdin import build_stdin

REFERENCE = Path(__file__).parents[1] / "tests/fixtures/cni/convert/reference_convert.py"

CONVERSIONS = [
    ("result-1.0.0.json", "0.4.0"),
    ("result-1.0.0.json", "0.2.0"),
    ("result-0.2.0.json", "1.0.0"),
]
STDIN_CASES = [("ADD", 0), ("ADD", 2), ("DEL", 0)]


def load_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_convert", REFERENCE)
    assert spec is not None, f"cannot load {REFERENCE}"
    assert spec.loader is not None, f"cannot load {REFERENCE}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_reference()


def python_convert(data: bytes, to_version: str) -> bytes:
    return json.dumps(reference.convert(json.loads(data), to_version)).encode()


def rust_convert(data: bytes, to_version: str) -> bytes:
    return native_cni.convert_result(data=data, to_version=to_version)


@pytest.mark.parametrize(("source", "to_version"), CONVERSIONS)
def test_convert_rust(
    benchmark: Any, payloads: dict[str, bytes], source: str, to_version: str
) -> None:
    benchmark.group = f"convert {source} -> {to_version}"
    out = benchmark(rust_convert, payloads[source], to_version)
    assert json.loads(out)["cniVersion"] == to_version


@pytest.mark.parametrize(("source", "to_version"), CONVERSIONS)
def test_convert_python(
    benchmark: Any, payloads: dict[str, bytes], source: str, to_version: str
) -> None:
    benchmark.group = f"convert {source} -> {to_version}"
    expected = json.loads(rust_convert(payloads[source], to_version))
    out = benchmark(python_convert, payloads[source], to_version)
    assert json.loads(out) == expected


def stdin_inputs(payloads: dict[str, bytes], command: str, index: int) -> dict[str, Any]:
    return {
        "network_list": payloads["network-list.json"],
        "index": index,
        "command": command,
        "cni_version": "1.0.0",
        "capability_args": payloads["capability-args.json"],
        "prev_result": None if (command, index) == ("ADD", 0) else payloads["result-1.0.0.json"],
    }


def python_stdin(inputs: dict[str, Any]) -> bytes:
    prev = inputs["prev_result"]
    return build_stdin(
        json.loads(inputs["network_list"]),
        index=inputs["index"],
        command=inputs["command"],
        cni_version=inputs["cni_version"],
        capability_args=json.loads(inputs["capability_args"]),
        prev_result=None if prev is None else json.loads(prev),
    )


def rust_stdin(inputs: dict[str, Any]) -> bytes:
    return native_cni.plugin_stdin(**inputs)


@pytest.mark.parametrize(("command", "index"), STDIN_CASES)
def test_stdin_rust(benchmark: Any, payloads: dict[str, bytes], command: str, index: int) -> None:
    benchmark.group = f"stdin {command} plugin {index}"
    out = benchmark(rust_stdin, stdin_inputs(payloads, command, index))
    assert json.loads(out)["name"] == "benchnet"


@pytest.mark.parametrize(("command", "index"), STDIN_CASES)
def test_stdin_python(benchmark: Any, payloads: dict[str, bytes], command: str, index: int) -> None:
    benchmark.group = f"stdin {command} plugin {index}"
    inputs = stdin_inputs(payloads, command, index)
    expected = json.loads(rust_stdin(inputs))
    out = benchmark(python_stdin, inputs)
    assert json.loads(out) == expected
