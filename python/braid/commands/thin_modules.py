"""``braid-thin``'s modules, compiled, in one file read at once.

A runtime starts ``braid-thin`` for every call, and a call imports about 170 modules (braid's,
``msgspec``'s and the standard library's). Imported one by one, each is looked for along
``sys.path``, its ``.pyc`` opened, read and checked: about 4 ms of every call. So the call's
modules are kept together, compiled, in ``braid/__pycache__/thin-modules.*.bin`` beside
braid's own ``.pyc`` files, and the next call imports them from it.

- **What is served.** Only a module the file holds whose source is still the file it was
  compiled from: the same path, modification time (to the nanosecond) and size, as the
  interpreter checks a ``.pyc``. Any other module, or one whose source changed, is imported
  as usual. A served module is what the usual import gives: its ``__file__``, ``__cached__``,
  loader (a ``SourceFileLoader``: source lines in tracebacks, resources) and code.
- **What is trusted.** The file is read only when it is a regular file (never through a link)
  owned by root or by this process's user and writable by no one else, in a ``__pycache__``
  that is likewise, and at most 32 MiB; its header names this interpreter (version, cache
  tag, optimisation level) and its ``sys.path``. Anything else counts as no file. Whoever
  may write there may replace braid's ``.pyc`` files already: the file grants nothing more.
- **What is kept.** One file per verb (ADD, CHECK, DEL, GC, STATUS), so one verb's modules
  never cost another verb's calls. It holds the modules of the last call that wrote it: a call
  that succeeded and imported a module the file did not serve, or that left more than an eighth
  of the file's modules unimported (what a rare call imported, or an earlier configuration).
  A call that failed writes nothing, so what only failures import (``logging``, a traceback's
  modules) stays out. The header also names braid's build: another build rewrites the file.
- **When it is written.** After the answer, unless the interpreter writes no bytecode (``-B``,
  ``PYTHONDONTWRITEBYTECODE``); a new file, then a rename, without ``fsync`` (a lost file
  costs one call's usual imports, nothing else).

Removing the files is always safe.
"""

from __future__ import annotations

import _imp
import marshal
import os
import stat
import sys

# What importlib.machinery and types name, from the modules the interpreter starts with:
# importing those two (with importlib and warnings), or typing, would cost every call before
# this finder serves anything.
from _frozen_importlib import ModuleSpec
from _frozen_importlib_external import SourceFileLoader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType, ModuleType
else:
    CodeType = type((lambda: None).__code__)

MAX_BYTES = 32 << 20
MAX_MODULES = 1024
# Never through a link, nor into a file that is not ours.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

# (is a package, source path, its st_mtime_ns, its st_size, code)
Entry = tuple[bool, str, int, int, CodeType]


# The verbs with a file of their own; any other shares one.
VERBS = frozenset({"ADD", "CHECK", "DEL", "GC", "STATUS"})


def header(build: str = "") -> bytes:
    """What names the interpreter whose code the file holds, braid's build, and where it looks
    for modules: another environment sharing braid's package directory finds other modules
    there, and another build of braid imports other ones."""
    tag = sys.implementation.cache_tag
    where = "\0".join(sys.path)
    python = f"{sys.hexversion:x} {tag} O{sys.flags.optimize}"
    line = f"braid-thin-modules 2 {python} {build!r} {where}\n"
    return line.encode("utf-8", "surrogateescape")


def bundle_path(verb: str = "") -> str:
    """``braid/__pycache__/thin-modules.<cache tag>.<header's hash>.<verb>.bin`` of this
    installation: one file for each interpreter and ``sys.path`` that runs braid-thin from it,
    so two environments sharing the package never take turns rewriting one file, and one for
    each verb (``VERBS``; ``other`` for any other). The hash is of the header without braid's
    build: another build finds the same file, whose header it refuses, and writes it again."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # noqa: PTH100, PTH120
    # The interpreter's own hash of hash-checked .pyc files (importlib.util.source_hash's),
    # without importing importlib.util or hashlib on every call.
    digest = _imp.source_hash(0, header()).hex()
    which = verb.lower() if verb in VERBS else "other"
    name = f"thin-modules.{sys.implementation.cache_tag}.{digest}.{which}.bin"
    return os.path.join(package, "__pycache__", name)  # noqa: PTH118


class _BundledLoader(SourceFileLoader):
    """The usual loader of a source file, whose code comes from the file already read."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code = code

    def get_code(self, fullname: str) -> CodeType:
        return self._code


class ThinModules:
    """A ``sys.meta_path`` finder serving the file's modules whose sources are unchanged."""

    def __init__(self, path: str, entries: dict[str, Entry], mark: bytes) -> None:
        self.path = path
        self.entries = entries
        self.mark = mark  # the header the file is read and written with
        self.before = frozenset(sys.modules)

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        entry = self.entries.get(fullname)
        if entry is None or not _unchanged(entry):
            return None
        is_package, origin, _, _, code = entry
        spec = ModuleSpec(
            fullname, _BundledLoader(fullname, origin, code), origin=origin, is_package=is_package
        )
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]  # noqa: PTH120
        spec.has_location = True
        return spec


def install(path: str | None = None, *, verb: str = "", build: str = "") -> ThinModules:
    """Puts the finder of the file of ``verb``'s calls for braid's ``build`` first on
    ``sys.meta_path`` (an empty one without a usable file)."""
    mark = header(build)
    path = path or bundle_path(verb)
    finder = ThinModules(path, read(path, mark), mark)
    sys.meta_path.insert(0, finder)
    return finder


def read(path: str, mark: bytes | None = None) -> dict[str, Entry]:
    """The file's entries; empty for a missing, untrusted, oversized or malformed file, or one
    whose header is not ``mark`` (``header()`` by default)."""
    data, mark = _trusted_bytes(path), header() if mark is None else mark
    if data is None or not data.startswith(mark):
        return {}
    try:
        # Trusted as braid's own .pyc files are: root's (or ours), writable by no one else.
        found = marshal.loads(memoryview(data)[len(mark) :])  # noqa: S302
    except (EOFError, ValueError, TypeError):
        return {}
    return found if _well_formed(found) else {}


def _trusted_bytes(path: str) -> bytes | None:
    """The file's bytes, if it and its directory are trusted and it holds at most MAX_BYTES."""
    try:
        directory = os.lstat(os.path.dirname(path))  # noqa: PTH120
        if not stat.S_ISDIR(directory.st_mode) or not _safely_owned(directory):
            return None
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _safely_owned(info) or info.st_size > MAX_BYTES:
            return None
        return _read_at_most(fd, MAX_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def save(finder: ThinModules, *, succeeded: bool = True) -> None:
    """After a call that ``succeeded``, writes the file again with the modules the call imported
    when it imported one the file did not serve, or when more than an eighth of the file's
    modules were not imported; never raises."""
    if sys.dont_write_bytecode or not succeeded:
        return
    added = _imported_usually(finder)
    used = [name for name in finder.entries if name in sys.modules]
    if not added and (len(finder.entries) - len(used)) * 8 <= len(finder.entries):
        return
    entries = {name: finder.entries[name] for name in used if _unchanged(finder.entries[name])}
    entries.update(added)
    if len(entries) > MAX_MODULES:
        return
    data = finder.mark + marshal.dumps(entries)
    if len(data) > MAX_BYTES:
        return
    temporary = f"{finder.path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, _WRITE, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, finder.path)  # noqa: PTH105
    except OSError:
        # contextlib.suppress would import contextlib before the finder serves it.
        try:  # noqa: SIM105
            os.unlink(temporary)  # noqa: PTH108
        except OSError:
            pass


def _imported_usually(finder: ThinModules) -> dict[str, Entry]:
    """The source modules imported since ``install`` by the usual loader, with their code."""
    found: dict[str, Entry] = {}
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        loader = getattr(spec, "loader", None)
        if name in finder.before or type(loader) is not SourceFileLoader:
            continue
        origin = getattr(spec, "origin", None)
        if not isinstance(origin, str) or not origin.endswith(".py"):
            continue
        try:
            # The source's identity first: a source changed after it is not served later.
            info = os.stat(origin)  # noqa: PTH116
            code = loader.get_code(name)
        except (OSError, ImportError, SyntaxError, ValueError):
            continue
        if isinstance(code, CodeType):
            is_package = getattr(spec, "submodule_search_locations", None) is not None
            found[name] = (is_package, origin, info.st_mtime_ns, info.st_size, code)
    return found


def _unchanged(entry: Entry) -> bool:
    try:
        info = os.stat(entry[1])  # noqa: PTH116
    except OSError:
        return False
    return info.st_mtime_ns == entry[2] and info.st_size == entry[3]


def _safely_owned(info: os.stat_result) -> bool:
    """Root's or ours, and writable by no one else."""
    return info.st_uid in (0, os.geteuid()) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_at_most(fd: int, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return None


def _well_formed(found: object) -> bool:
    if not isinstance(found, dict) or len(found) > MAX_MODULES:
        return False
    return all(isinstance(name, str) and _entry(e) for name, e in found.items())


def _entry(e: object) -> bool:
    if not isinstance(e, tuple) or len(e) != 5:
        return False
    is_package, origin, mtime, size, code = e
    return (
        isinstance(is_package, bool)
        and isinstance(origin, str)
        and os.path.isabs(origin)  # noqa: PTH117
        and origin.endswith(".py")
        and isinstance(mtime, int)
        and isinstance(size, int)
        and isinstance(code, CodeType)
    )
