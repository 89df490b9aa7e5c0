"""Plugins that run in another root filesystem than the caller's: a node's, seen from a
container that has it mounted (a DaemonSet's ``hostPath: /``).

Every path the CNI runtime hands around (``CNI_PATH``, ``CNI_NETNS``, a plugin's own files)
names a file of the node. A process that sees the node's root at ``/hostroot`` cannot simply
put ``/hostroot`` in front of such a path: the node's absolute symbolic links (Debian's
``/var/run -> /run``, a ``/opt/cni/bin/bridge -> /usr/lib/cni/bridge``) would then resolve in
the container's own root. ``HostRoot.local`` resolves a node path inside the root, following
links as the node would, and gives the path this process opens. Plugins themselves are
executed chrooted into the root (``ProcessExecutor(root=...)``), so they see the node exactly
as a plugin the runtime executes there does.
"""

from __future__ import annotations

import errno
import os
import stat

# As the kernel's limit on symbolic links followed in one lookup (ELOOP beyond).
MAX_LINKS = 40
# Resolved directories remembered: a node's few (the netns, CNI and state directories).
KEEP_DIRECTORIES = 256


class HostRoot:
    """The node's root filesystem, visible to this process at ``path`` (an absolute
    directory). ``fd`` is a descriptor of it held for the object's lifetime (the root a
    plugin's process enters before it executes)."""

    def __init__(self, path: str) -> None:
        if not path.startswith("/") or "\0" in path:
            raise ValueError(f"the host root must be an absolute path, not {path!r}")
        self.path = os.path.normpath(path)
        # What goes before a node path ("" when the root is this process's own /).
        self._prefix = "" if self.path == "/" else self.path
        self.fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        # Directory -> its resolution: a call's paths differ by their last component (each
        # pod's network namespace file), never by where the node's links lead.
        self._directories: dict[str, str] = {}

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __repr__(self) -> str:
        return f"HostRoot({self.path!r})"

    def local(self, path: str) -> str:
        """The path at which this process reaches the node's ``path``: symbolic links are
        followed inside the root (an absolute target starts again at the root, ``..`` never
        leaves it); components that do not exist yet are kept as they are. A relative path is
        returned unchanged. A directory's resolution is remembered (the node's links to its
        directories do not change while braid runs); the last component is looked at each
        time."""
        if not path.startswith("/"):
            return path
        directory, _, name = path.rpartition("/")
        resolved = self._directories.get(directory)
        if resolved is None:
            if len(self._directories) >= KEEP_DIRECTORIES:
                self._directories = {}
            resolved = self._directories[directory] = self.resolve(directory or "/")
        if name in ("", ".", ".."):
            return self._prefix + self.resolve(path)
        joined = f"{resolved.rstrip('/')}/{name}"
        if os.path.islink(self._prefix + joined):  # noqa: PTH114 - per call, no Path
            return self._prefix + self.resolve(joined)
        return self._prefix + joined

    def resolve(self, path: str) -> str:
        """``path`` with every symbolic link inside the root followed: the node's own view of
        it, as an absolute path (the part from the first missing component on as given)."""
        done: list[str] = []
        pending = [part for part in path.split("/") if part]
        pending.reverse()
        links = 0
        while pending:
            part = pending.pop()
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = self._prefix + "/" + "/".join([*done, part])
            try:
                mode = os.lstat(candidate).st_mode
            except OSError:
                done.append(part)
                done.extend(reversed(pending))
                break
            if not stat.S_ISLNK(mode):
                done.append(part)
                continue
            links += 1
            if links > MAX_LINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
            target = os.readlink(candidate)  # noqa: PTH115
            if target.startswith("/"):
                done = []
            pending.extend(reversed([p for p in target.split("/") if p]))
        return "/" + "/".join(done)
