"""The paths braid trusts on a node (``braid_wire::trust``, the shim's rule, through
``braid._native``): ``daemonSocketDir``, ``cniDir``, ``binDir`` and ``readinessindicatorfile``
decide which records are replayed and which executables run, as root, so a call's stdin is no
authority for them.

- ``braid-thin`` takes them from the node file beside it (``braid-node.json``, what
  ``braidctl install`` writes) when it exists, else uses stdin's once every existing component
  of each is owned by root and closed to group and others (``from_node``);
- the daemon checks the same way each of them that stdin decides (the operator's
  configuration leaves it out), as the node sees it through its root (``check_from_stdin``).

Anything else is code 7 naming the key and the path (``docs/configuration.md``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

import msgspec

from braid._native import delegate as native_delegate
from braid.config.keys import snake
from braid.config.schema import BraidConfig

# (key, kind) of each path of the node file, as the shim declares them (``braid_cni::trust``).
NODE_PATH_KEYS: tuple[tuple[str, str], ...] = tuple(native_delegate.NODE_PATH_KEYS)
# (attribute, key) of each path the rule covers (the node file's keys, as the shim declares
# them); the daemon's own socket directory is its own.
CHECKED = tuple((snake(key), key) for key, _ in NODE_PATH_KEYS if key != "daemonSocketDir")


def node_file_beside(executable: str) -> str:
    """The node file in the directory the runtime found ``executable`` in."""
    directory = os.path.dirname(os.path.abspath(executable))  # noqa: PTH120, PTH100
    return os.path.join(directory, native_delegate.NODE_FILE_NAME)  # noqa: PTH118


def from_node(config: BraidConfig, node_file: str) -> BraidConfig:
    """``config`` with the node file's paths, else its own once they pass the check."""
    dirs = config.engine.dirs
    given = (config.daemon.socket_dir, dirs.cni_dir, dirs.bin_dir, dirs.readiness_indicator_file)
    trusted = native_delegate.trusted_paths(
        socket_dir=given[0],
        cni_dir=given[1],
        bin_dir=given[2],
        readiness_file=given[3],
        node_file=node_file,
    )
    socket_dir, cni_dir, bin_dir, ready = trusted
    if (socket_dir, cni_dir, bin_dir, ready) == given:
        return config
    return msgspec.structs.replace(
        config,
        daemon_socket_dir=socket_dir,
        cni_dir=cni_dir,
        bin_dir=bin_dir,
        readinessindicatorfile=ready,
    )


def check_from_stdin(
    config: BraidConfig, decided: Iterable[str], local: Callable[[str], str]
) -> None:
    """Code 7 unless each checked path of ``config`` that the operator does not decide
    (``decided``: the attributes it sets) is root's and closed, as ``local`` names it here."""
    skip = frozenset(decided)
    for attribute, key in CHECKED:
        value = getattr(config, attribute)
        if value and attribute not in skip:
            native_delegate.check_closed_path(key=key, path=local(value))
