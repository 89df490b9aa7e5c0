"""Lazy package exports: a package's public names imported from their modules when first used.

A package whose ``__init__`` imports all its modules makes importing any one of them import
them all (Python runs the package's ``__init__`` first). ``braid-thin`` runs in a fresh process
for every CNI call, so what it imports is paid on every call: the packages it passes through
(``braid.engine``, ``braid.nad``) name their exports here instead (PEP 562, module
``__getattr__``), and type checkers read the same names from the package's ``TYPE_CHECKING``
imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: each name of ``exports`` (name -> module)
    imported from its module on first access, then kept in the package's namespace."""

    def attribute(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return attribute
