"""What `braid-thin` imports: a runtime starts it for every call, so every module it imports is
paid on every call. VERSION imports nothing of the engine; the other verbs import the engine
and nothing of the daemon, the metrics, the Kubernetes client, PyYAML (the manifests here are
JSON) or the command line.

Each call runs `braid.commands.thin.main` in a fresh interpreter, as the console script does,
and lists `sys.modules` after it answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import braid

# Never on the path of a call that uses the file store.
NEVER = (
    "braid.daemon",
    "braid.commands.braidctl",
    "braid.commands.cni",
    "braid.k8s.client",
    "braid.k8s.kubeconfig",
    "braid.k8s.thin",
    "prometheus_client",
    "kubernetes",
    "urllib3",
    "h2",
    "hpack",
    "hyperframe",
    "braid.k8s.h2_transport",
    "http.client",
    "ssl",
    "yaml",
    "argparse",
    "tempfile",
    "secrets",
    "socket",
    "subprocess",
    # JSON files are read with msgspec, which the engine imports anyway.
    "json",
    "copy",
    "threading",
    # msgspec's optional helper: with `inspect`, `ast`, `dis` and `tokenize`, 10-15 ms a call
    # (`braid.commands.thin` imports msgspec without it).
    "typing_extensions",
    # Imported only when a call configures a logLevel or logFile (`braid.quietlog`).
    "logging",
    "traceback",
    "inspect",
    "ast",
    # About a millisecond per class here (each generates and compiles its methods), and it
    # imports inspect: the engine's records are msgspec structs.
    "dataclasses",
    # With urllib.parse and ipaddress about 3 ms a call: the thin path's paths are strings.
    "pathlib",
    "urllib",
    "fnmatch",
    "glob",
    # What msgspec's import pulls in for nothing a call uses (deferred by braid.commands.thin):
    # `uuid` asks `platform.system()`, the JSON Schema generator calls `textwrap.dedent`.
    "platform",
    "textwrap",
    "msgspec.inspect",
    # A result's IPv4 addresses are written without it (braid.nad.status).
    "ipaddress",
    # msgspec's import reads `_datetime`'s C API and type, not the pure Python module's body.
    "datetime",
)
# Not for VERSION either: its answer needs no configuration.
NOT_FOR_VERSION = (
    "braid.engine",
    "braid.cni",
    "braid.config",
    "braid.nad",
    "braid.k8s",
    "msgspec",
)

PROBE = """
import builtins, sys
compiled = []
_compile = builtins.compile
def compile(source, filename, mode, *args, **kwargs):
    # Not a module's source compiled by the import system (no .pyc yet): what else compiles.
    if not (mode == "exec" and str(filename).endswith(".py")):
        compiled.append([str(source)[:80], str(filename), mode])
    return _compile(source, filename, mode, *args, **kwargs)
builtins.compile = compile
from braid.commands.thin import main
main()
builtins.compile = _compile
modules = sorted(sys.modules)
specs = {n: getattr(m, "__spec__", None) for n, m in sys.modules.items()}
loaders = {n: type(getattr(s, "loader", None)).__name__ for n, s in specs.items()}
served = [n for n, loader in loaders.items() if loader == "_BundledLoader"]
import json  # after the listing: the call itself does not import it
with open(sys.argv[1], "w") as out:
    json.dump(modules, out)
with open(sys.argv[1] + ".served", "w") as out:
    json.dump(served, out)
with open(sys.argv[1] + ".compiled", "w") as out:
    json.dump(compiled, out)
"""


def imported_by_thin(
    tmp_path: Path, env: dict[str, str], stdin: bytes
) -> tuple[set[str], dict[str, Any]]:
    """The modules one `braid-thin` call imported, and its answer."""
    listing = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(listing)],
        env={"PATH": "/usr/bin:/bin", **env},
        input=stdin,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert b"Traceback" not in proc.stderr, proc.stderr
    answer = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return set(json.loads(listing.read_text())), answer


def offending(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f"{f}.") for f in forbidden))


def test_version_imports_nothing_of_the_engine(tmp_path: Path) -> None:
    modules, answer = imported_by_thin(tmp_path, {"CNI_COMMAND": "VERSION"}, b"")
    assert "1.0.0" in answer["supportedVersions"]
    assert offending(modules, NEVER + NOT_FOR_VERSION) == []


# How far each call gets without a network namespace (the unit tier makes none): ADD past its
# plan (the NAD read from its file) to the interface check, CHECK to the record, DEL through
# both delegates, GC and STATUS to the end.
REACHED = {
    "ADD": "listing interfaces in network namespace",
    "CHECK": "braid holds no attachment record",
    "DEL": "",
    "GC": "",
    "STATUS": "",
}


@pytest.mark.parametrize("command", sorted(REACHED))
def test_verbs_import_the_engine_alone(dirs: Any, tmp_path: Path, command: str) -> None:
    """Through the whole call: the configuration, the store's choice (the file store), the
    plan with a NAD from a JSON file, the delegates (fake plugins) and the answer."""
    nad = {"cniVersion": "1.0.0", "type": "fakesec"}
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "sec", "namespace": "default"},
        "spec": {"config": json.dumps(nad)},
    }
    (dirs.root / "nads" / "sec.json").write_text(json.dumps(manifest))
    selection = {"k8s.v1.cni.cncf.io/networks": "sec"}
    stdin = dirs.stdin(runtimeConfig={"io.kubernetes.cri.pod-annotations": selection})
    env = {**dirs.env(command, CNI_NETNS="/nonexistent"), "FAKE_CNI_STATE": str(dirs.state)}
    modules, answer = imported_by_thin(tmp_path, env, stdin)
    assert answer.get("msg", "").startswith(REACHED[command]), answer
    if command == "DEL":
        assert len(dirs.calls("DEL")) == 2
    assert offending(modules, NEVER) == []
    # Each verb's module of the engine only for its calls (``braid.engine.entry``); a plan's
    # resolution only where one is made: ADD, STATUS (the default network's) and here DEL,
    # which finds no record here (none where it finds one: the kernel tier's
    # ``test_a_thin_del_that_finds_its_record_resolves_no_plan``).
    assert ("braid.engine.attach" in modules) is (command == "ADD")
    assert (modules >= RESOLVING) is (command in ("ADD", "STATUS", "DEL"))
    assert modules >= RESOLVING or not RESOLVING & modules


RESOLVING = {"braid.nad.resolve", "braid.nad.default_network", "braid.nad.annotations"}


def verb_files(verb: str) -> dict[str, tuple[int, int]]:
    """The files of compiled modules of ``verb``'s calls in braid's ``__pycache__``: their
    inode and modification time."""
    found = (Path(braid.__file__).parent / "__pycache__").glob(f"thin-modules.*.{verb}.bin")
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in found}


def test_a_later_call_imports_its_modules_from_its_verbs_file(dirs: Any, tmp_path: Path) -> None:
    """``braid.commands.thin_modules``: a call that succeeded keeps the modules it imported in
    its verb's file, and the next call of the verb imports them from it (braid's, msgspec's and
    the standard library's). A call that failed writes nothing."""
    env = {**dirs.env("ADD", CNI_NETNS="/nonexistent"), "FAKE_CNI_STATE": str(dirs.state)}
    before = verb_files("add")
    _, answer = imported_by_thin(tmp_path, env, dirs.stdin())
    assert answer["msg"].startswith(REACHED["ADD"]), answer
    assert verb_files("add") == before
    env = {**dirs.env("DEL", CNI_NETNS="/nonexistent"), "FAKE_CNI_STATE": str(dirs.state)}
    for _ in range(2):
        modules, answer = imported_by_thin(tmp_path, env, dirs.stdin())
        assert answer == {}, answer
    served = set(json.loads((tmp_path / "modules.json.served").read_text()))
    assert {"braid.engine.entry", "braid.engine.teardown", "msgspec", "typing"} <= served
    assert offending(modules, NEVER) == []


def printed_by(probe: str) -> list[str]:
    """What ``probe`` prints, word by word, run in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
        timeout=30,
        text=True,
    )
    return proc.stdout.split()


DEFERRED_PROBE = """
import sys
from braid.commands.thin import _import_msgspec
_import_msgspec()
import msgspec, uuid
deferred = sorted(
    n for n in ("platform", "textwrap", "msgspec.inspect", "datetime") if n in sys.modules
)
import platform, textwrap


class Point(msgspec.Struct):
    'A point.'

    x: int


class Pair(msgspec.Struct):
    first: "Point"
    rest: "list[Point] | None" = None


schema = msgspec.json.schema(Point)
import msgspec.inspect
import typing
later = msgspec.json.decode(b'{"first": {"x": 1}, "rest": [{"x": 2}]}', type=Pair)


class Broken(msgspec.Struct):
    bad: "int )"


class Unknown(msgspec.Struct):
    bad: "Nowhere"


errors = []
for kind in (Broken, Unknown):
    try:
        msgspec.json.decode(b"{}", type=kind)
    except Exception as exc:
        errors.append(type(exc).__name__ + ":" + str(exc).replace(" ", "_"))
print(deferred, uuid._LINUX, uuid.platform.system() == platform.system(),
      uuid.platform.machine() == platform.machine(), type(platform).__name__,
      msgspec._json_schema.textwrap.dedent("  a") == "a", textwrap.dedent("  b"),
      schema["$defs"]["Point"]["description"], type(msgspec.inspect).__name__,
      type(msgspec.inspect.type_info(int)).__name__,
      typing.ForwardRef.__module__,
      isinstance(msgspec._utils._forward_ref("int"), typing.ForwardRef),
      later.first.x + later.rest[0].x, typing.get_type_hints(Pair)["rest"] == list[Point] | None,
      *errors)
"""


def test_msgspec_imported_the_thin_way_stays_whole() -> None:
    """The modules braid-thin defers while msgspec is imported are not loaded by that import,
    and everything that holds them still works: ``uuid`` knows it is on Linux, its ``platform``
    answers every attribute (the real module's, imported then), msgspec's JSON Schema
    generator dedents and inspects, and a later ``import`` gets the real modules. The forward
    references msgspec makes keep their text: ``typing.ForwardRef`` is typing's own again,
    postponed annotations decode as before, and a broken or unknown one fails as before."""
    assert printed_by(DEFERRED_PROBE) == [
        "[]",
        "True",
        "True",
        "True",
        "module",
        "True",
        "b",
        "A",
        "point.",
        "module",
        "IntType",
        "typing",
        "True",
        "3",
        "True",
        "SyntaxError:Forward_reference_must_be_an_expression_--_got_'int_)'",
        "NameError:name_'Nowhere'_is_not_defined",
    ]


DATETIME_PROBE = """
import sys
from braid.commands.thin import _import_msgspec
_import_msgspec()
import msgspec, _datetime
before = "datetime" in sys.modules
import datetime
moment = datetime.datetime(2026, 11, 29, 3, 4, 5, 6, tzinfo=datetime.timezone.utc)
print(before, type(datetime).__name__, datetime.__file__.endswith("datetime.py"),
      datetime.datetime is _datetime.datetime, msgspec.json.encode(moment).decode(),
      msgspec.json.decode(b'"2026-11-29T03:04:05.000006+01:00"', type=datetime.datetime)
      == moment.replace(hour=2), msgspec.json.decode(b'"2026-11-29"', type=datetime.date)
      == datetime.date(2026, 11, 29), msgspec.json.decode(b'"PT1S"', type=datetime.timedelta)
      == datetime.timedelta(seconds=1), msgspec.to_builtins(moment.astimezone(
      datetime.timezone(datetime.timedelta(hours=2)))))
"""


def test_msgspec_imported_the_thin_way_knows_datetime() -> None:
    """msgspec's import reads ``datetime``'s C API and ``datetime`` type from ``_datetime``, the
    same objects ``datetime`` exports, without running the pure Python module ``datetime``
    replaces with them: later ``datetime`` is the real module and msgspec encodes, decodes and
    converts its values as without braid-thin."""
    assert printed_by(DATETIME_PROBE) == [
        "False",
        "module",
        "True",
        "True",
        '"2026-11-29T03:04:05.000006Z"',
        "True",
        "True",
        "True",
        "2026-11-29T05:04:05.000006+02:00",
    ]
