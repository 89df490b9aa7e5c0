"""The directories of braid's device-information files, opened level by level without following
a link: ``<deviceInfoDir>/cni/<container ID>`` (``docs/devices.md``).

The directories above ``deviceInfoDir`` are the node's and are reached as the node names them
(links followed; the missing ones created 0700). ``deviceInfoDir`` and each level below it is
opened by descriptor from the one above with ``O_NOFOLLOW``: a level that is a link, not a
directory, or not this process's user's (root's) is refused, never followed or written through.
A level braid creates is made 0700 whatever the umask (``mkdir``, then ``fchmod``). Files in the
last level are then written by its descriptor. They are removed by the rule the shim follows
(``braid_delegate::devinfo``, through ``braid.engine.devices.remove_device_info``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from braid.errors import IO_FAILURE, CniError

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
PRIVATE = 0o700


class Refused(OSError):
    """A level that is a link, not a directory, or not root's."""


def open_levels(local_base: str, levels: list[str], *, create: bool) -> int | None:
    """A descriptor of ``local_base/levels...`` (``local_base``: ``deviceInfoDir`` where this
    process reaches it), each level checked (and, with ``create``, made) as the module says;
    None when a level does not exist and ``create`` is false. Raises ``Refused`` (or another
    ``OSError``) naming the level."""
    try:
        return make_levels(local_base, levels) if create else _open(local_base, levels)
    except FileNotFoundError:
        if create:
            raise
        return None


def make_levels(local_base: str, levels: list[str]) -> int:
    """``open_levels`` with ``create``: every missing level made 0700."""
    return _open(local_base, levels, create=True)


def _open(local_base: str, levels: list[str], *, create: bool = False) -> int:
    parent_path, name = os.path.split(local_base.rstrip("/") or "/")
    parent = _open_node_dir(parent_path or "/", create=create)
    path = parent_path
    for level in [name, *levels]:
        path = f"{path.rstrip('/')}/{level}"
        try:
            child = _level(parent, level, path, create=create)
        finally:
            os.close(parent)
        parent = child
    return parent


def _open_node_dir(path: str, *, create: bool) -> int:
    """The node's directory ``path``, links followed; its missing levels made 0700 (without
    ``create``, a missing one raises ``FileNotFoundError``)."""
    missing: list[str] = []
    while True:
        try:
            fd = os.open(path, _DIRECTORY)
            break
        except FileNotFoundError:
            if not create or path in ("/", ""):
                raise
            path, name = os.path.split(path)
            missing.append(name)
    for name in reversed(missing):
        path = f"{path.rstrip('/')}/{name}"
        try:
            child = _level(fd, name, path, create=True)
        finally:
            os.close(fd)
        fd = child
    return fd


def _level(parent: int, name: str, path: str, *, create: bool) -> int:
    """``name`` in ``parent`` opened without following a link, made 0700 when created here."""
    made = False
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, PRIVATE, dir_fd=parent)
            made = True
    try:
        fd = os.open(name, _DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(
                f"{path} is a link or not a directory: braid does not follow it"
            ) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise Refused(f"{path} is not a directory of braid's user (uid {os.geteuid()})")
    if made:
        os.fchmod(fd, PRIVATE)
    return fd


def write_file(directory: int, name: str, data: bytes | None) -> None:
    """Replaces ``name`` in ``directory`` with a new file (0600) holding ``data`` (None: only
    removes it); a link in its place is removed, never followed."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory)
    if data is None:
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=directory)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def io_error(what: str, exc: OSError) -> CniError:
    """The CNI error (code 5) of a device-information directory that failed."""
    return CniError(IO_FAILURE, f"device-information files cannot be {what}", str(exc))
