"""The daemon makes msgspec's decoding information of every Struct class before its threads
serve (braid.daemon.struct_types): many threads decoding at once into classes none had used
yet is what a node reboot's first burst of requests does, and msgspec 0.22 crashes the process
when the first use of a class happens on two threads at once. Each run is a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

# 300 new Struct classes, then 8 threads decoding into each of them at once, switching threads
# as often as the interpreter can.
PROCESS = """
import sys, threading
from typing import Optional
import msgspec
from braid.daemon.struct_types import prepare_struct_types
sys.setswitchinterval(1e-6)
FIELDS = [(f"f{j}", Optional[dict[str, list[int]]], None) for j in range(12)]
classes = [msgspec.defstruct(f"S{i}", FIELDS) for i in range(300)]
class Child(classes[0]):
    extra: int = 0
print(prepare_struct_types() >= 301, flush=True)
doc = msgspec.json.encode({f"f{j}": {"a": [1, 2]} for j in range(12)} | {"extra": 3})
barrier = threading.Barrier(8)
decoded = []
def work():
    barrier.wait()
    decoded.extend(msgspec.json.decode(doc, type=c) for c in [*classes, Child])
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(decoded), decoded[-1].extra, decoded[0].f11)
"""


def test_threads_decode_into_prepared_classes_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROCESS], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr  # -11 (SIGSEGV) without the preparation
    assert done.stdout.split("\n")[:2] == ["True", "2408 3 {'a': [1, 2]}"]


def test_a_class_that_cannot_be_decoded_yet_is_left_as_it_was() -> None:
    """A class whose annotation names a type imported for the type checker only: no error,
    and it still fails the same way on its own first use."""
    script = """
import msgspec
from braid.daemon.struct_types import prepare_struct_types
class Later(msgspec.Struct):
    x: "Unknown"
prepare_struct_types()
try:
    msgspec.json.Decoder(Later)
except NameError as exc:
    print("NameError", exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith("NameError")
