"""`braid-thin`'s modules kept compiled in one file (`braid.commands.thin_modules`): a later
process imports them from it, a changed source is imported as usual, and an untrusted, oversized
or malformed file counts as no file.

Each import runs in a fresh interpreter over a package made here, so nothing of braid's own
installation is read or written."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

import pytest

import braid
from braid.commands import thin_modules

# One process: install the file's finder, import the package, report, save.
PROCESS = """
import json, os, sys
sys.path.insert(0, sys.argv[2])
sys.path.extend(sys.argv[3:])
from braid.commands import thin_modules
finder = thin_modules.install(sys.argv[1], build=os.environ.get("BUILD", ""))
import pkg.alpha, pkg.sub.beta
for extra in filter(None, os.environ.get("EXTRA", "").split(",")):
    __import__(extra)
report = {}
for name in ("pkg", "pkg.alpha", "pkg.sub", "pkg.sub.beta"):
    module = sys.modules[name]
    report[name] = {
        "loader": type(module.__spec__.loader).__name__,
        "file": module.__file__,
        "cached": module.__cached__,
        "path": list(getattr(module, "__path__", [])),
    }
report["value"] = pkg.alpha.VALUE + pkg.sub.beta.VALUE
report["source"] = pkg.alpha.__spec__.loader.get_source("pkg.alpha")
thin_modules.save(finder, succeeded=os.environ.get("FAILED") is None)
json.dump(report, sys.stdout)
"""


def run(
    bundle: Path,
    root: Path,
    *,
    no_bytecode: bool = False,
    more_path: str = "",
    extra: tuple[str, ...] = (),
    failed: bool = False,
    build: str = "",
) -> dict[str, object]:
    env = {
        "PATH": "/usr/bin:/bin",
        "EXTRA": ",".join(extra),
        "BUILD": build,
        **({"PYTHONDONTWRITEBYTECODE": "1"} if no_bytecode else {}),
        **({"FAILED": "1"} if failed else {}),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROCESS,
            str(bundle),
            str(root),
            *([more_path] if more_path else []),
        ],
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    )
    report: dict[str, object] = json.loads(done.stdout)
    return report


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """``pkg`` (``alpha``, ``sub.beta``) under ``tmp_path/src``; the file goes in ``cache``."""
    src = tmp_path / "src"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "alpha.py").write_text("VALUE = 1\n")
    (src / "pkg" / "sub" / "__init__.py").write_text("")
    (src / "pkg" / "sub" / "beta.py").write_text("VALUE = 10\n")
    for index in range(4):
        (src / "pkg" / f"extra{index}.py").write_text(f"VALUE = {index}\n")
    (tmp_path / "cache").mkdir(mode=0o755)
    return src


def loaders(report: dict[str, object]) -> dict[str, object]:
    return {name: info["loader"] for name, info in report.items() if isinstance(info, dict)}


def test_a_later_process_imports_the_modules_from_the_file(tmp_path: Path, package: Path) -> None:
    bundle = tmp_path / "cache" / "thin-modules.bin"
    first = run(bundle, package)
    assert set(loaders(first).values()) == {"SourceFileLoader"}
    assert bundle.is_file()
    second = run(bundle, package)
    assert set(loaders(second).values()) == {"_BundledLoader"}
    # What the usual import gives: file, cached file, package path, source, code.
    for name in ("pkg", "pkg.alpha", "pkg.sub", "pkg.sub.beta"):
        info, usual = second[name], first[name]
        assert isinstance(info, dict)
        assert isinstance(usual, dict)
        assert (info["file"], info["cached"], info["path"]) == (
            usual["file"],
            usual["cached"],
            usual["path"],
        )
    assert second["value"] == 11
    assert second["source"] == "VALUE = 1\n"


def test_a_changed_source_is_imported_as_usual_and_kept_again(
    tmp_path: Path, package: Path
) -> None:
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package)
    # Another size too: the interpreter's own .pyc check sees whole seconds and the size.
    (package / "pkg" / "alpha.py").write_text("VALUE = 22\n")
    changed = run(bundle, package)
    assert changed["value"] == 32
    assert loaders(changed)["pkg.alpha"] == "SourceFileLoader"
    assert loaders(changed)["pkg.sub.beta"] == "_BundledLoader"
    again = run(bundle, package)
    assert again["value"] == 32
    assert set(loaders(again).values()) == {"_BundledLoader"}


def test_no_file_is_written_without_bytecode(tmp_path: Path, package: Path) -> None:
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package, no_bytecode=True)
    assert not bundle.exists()


def good_file(tmp_path: Path, package: Path) -> Path:
    """A file written by a process, with this process's header (its ``sys.path`` differs)."""
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package)
    _, _, rest = bundle.read_bytes().partition(b"\n")
    bundle.write_bytes(thin_modules.header() + rest)
    assert {"pkg", "pkg.alpha", "pkg.sub", "pkg.sub.beta"} <= set(thin_modules.read(str(bundle)))
    return bundle


def test_a_link_or_a_file_others_may_write_is_not_read(tmp_path: Path, package: Path) -> None:
    bundle = good_file(tmp_path, package)
    link = tmp_path / "cache" / "link.bin"
    link.symlink_to(bundle)
    assert thin_modules.read(str(link)) == {}
    bundle.chmod(0o664)
    assert thin_modules.read(str(bundle)) == {}
    bundle.chmod(0o644)
    bundle.parent.chmod(0o777)
    assert thin_modules.read(str(bundle)) == {}


def test_an_oversized_file_is_not_read(tmp_path: Path, package: Path) -> None:
    bundle = good_file(tmp_path, package)
    with bundle.open("r+b") as out:
        out.truncate(thin_modules.MAX_BYTES + 1)
    assert thin_modules.read(str(bundle)) == {}


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a bundle",
        b"braid-thin-modules 1 0 other-tag O0\n" + marshal.dumps({}),
        b"HEADER" + b"\xff\x00garbage",
        b"HEADER" + marshal.dumps([1, 2, 3]),
        b"HEADER" + marshal.dumps({"pkg": (True, "/x/pkg/__init__.py", 1, 2, "no code")}),
        b"HEADER" + marshal.dumps({"pkg": (True, "relative.py", 1, 2, compile("", "", "exec"))}),
        b"HEADER" + marshal.dumps({1: (True, "/x/pkg/__init__.py", 1, 2, None)}),
    ],
    ids=[
        "empty",
        "no-header",
        "other-interpreter",
        "garbage",
        "list",
        "no-code",
        "relative",
        "key",
    ],
)
def test_a_malformed_file_counts_as_none(tmp_path: Path, content: bytes) -> None:
    bundle = tmp_path / "thin-modules.bin"
    bundle.write_bytes(content.replace(b"HEADER", thin_modules.header()))
    bundle.chmod(0o644)
    assert thin_modules.read(str(bundle)) == {}


def test_a_truncated_file_counts_as_none(tmp_path: Path, package: Path) -> None:
    bundle = good_file(tmp_path, package)
    data = bundle.read_bytes()
    bundle.write_bytes(data[: len(data) // 2])
    assert thin_modules.read(str(bundle)) == {}


def test_the_files_are_beside_braids_compiled_modules_one_per_verb() -> None:
    paths = {verb: Path(thin_modules.bundle_path(verb)) for verb in ("ADD", "DEL", "", "NOPE")}
    for verb, path in paths.items():
        assert path.parent == Path(braid.__file__).parent / "__pycache__"
        assert path.name.startswith(f"thin-modules.{sys.implementation.cache_tag}.")
        assert path.name.endswith(f".{verb.lower() if verb in ('ADD', 'DEL') else 'other'}.bin")
    assert len(set(paths.values())) == 3


EXTRAS = ("pkg.extra0", "pkg.extra1", "pkg.extra2", "pkg.extra3")


def held(bundle: Path) -> set[str]:
    """The package's modules the file holds (the process imports others too)."""
    _, _, rest = bundle.read_bytes().partition(b"\n")
    return {name for name in marshal.loads(rest) if name.split(".")[0] == "pkg"}  # noqa: S302


def test_a_failed_call_writes_nothing(tmp_path: Path, package: Path) -> None:
    """What only a failure imports (logging, a traceback's modules) never costs later calls."""
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package, failed=True)
    assert not bundle.exists()
    run(bundle, package)
    written = bundle.stat()
    failed = run(bundle, package, extra=EXTRAS, failed=True)
    assert loaders(failed)["pkg.alpha"] == "_BundledLoader"
    assert bundle.stat().st_mtime_ns == written.st_mtime_ns
    assert held(bundle) == {"pkg", "pkg.alpha", "pkg.sub", "pkg.sub.beta"}


def test_modules_a_call_did_not_import_go_once_over_an_eighth(
    tmp_path: Path, package: Path
) -> None:
    """A file holding many modules the calls no longer import is written again without them;
    a few are kept (another call of the verb may import them: no rewrite back and forth)."""
    bundle = tmp_path / "cache" / "thin-modules.bin"
    base = {"pkg", "pkg.alpha", "pkg.sub", "pkg.sub.beta"}
    run(bundle, package, extra=EXTRAS)
    assert held(bundle) == base | set(EXTRAS)
    written = bundle.stat().st_ino
    # One of ten (the process imports two more) not imported: kept as it is.
    fewer = run(bundle, package, extra=EXTRAS[:3])
    assert set(loaders(fewer).values()) == {"_BundledLoader"}
    assert bundle.stat().st_ino == written
    # Four of ten: written again with what the call imported.
    run(bundle, package)
    assert held(bundle) == base
    # Adding one writes the call's modules: those it imported, served or not.
    run(bundle, package, extra=EXTRAS[:1])
    assert held(bundle) == base | {"pkg.extra0"}


def test_another_build_of_braid_does_not_use_the_file_and_writes_it_again(
    tmp_path: Path, package: Path
) -> None:
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package, build="one")
    assert set(loaders(run(bundle, package, build="one")).values()) == {"_BundledLoader"}
    assert set(loaders(run(bundle, package, build="two")).values()) == {"SourceFileLoader"}
    assert b" 'two' " in bundle.read_bytes().partition(b"\n")[0]
    assert set(loaders(run(bundle, package, build="two")).values()) == {"_BundledLoader"}


def test_another_module_path_does_not_use_the_file(tmp_path: Path, package: Path) -> None:
    """Another environment sharing braid's package directory has other modules to find."""
    bundle = tmp_path / "cache" / "thin-modules.bin"
    run(bundle, package)
    other = run(bundle, package, more_path=str(tmp_path / "elsewhere"))
    assert set(loaders(other).values()) == {"SourceFileLoader"}
