"""Where plugins are looked for: ``binDir``, then the runtime's ``CNI_PATH``, empty and repeated
entries dropped. One rule for the engine, the shim's DEL replay, ``braidctl attach``/``explain``
and ``braidctl doctor``: ``braid_delegate::lookup::search_dirs``.

A command an operator runs has no runtime to pass ``CNI_PATH``: it takes ``$CNI_PATH``, else
``DEFAULT_CNI_PATH`` (the usual directory and Debian's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from braid._native import delegate as native_delegate

DEFAULT_CNI_PATH = "/opt/cni/bin:/usr/lib/cni"


def search_dirs(bin_dir: str, cni_path: str | Sequence[str]) -> list[str]:
    """The directories, in order, a plugin is looked for in (``cni_path``: ``CNI_PATH``'s
    text or its entries)."""
    path = cni_path if isinstance(cni_path, str) else ":".join(cni_path)
    return native_delegate.plugin_search_dirs(bin_dir=bin_dir, cni_path=path)


def operator_cni_path(environ: Mapping[str, str]) -> str:
    """``CNI_PATH`` for a command an operator runs: ``$CNI_PATH``, else the default."""
    return environ.get("CNI_PATH", DEFAULT_CNI_PATH)
