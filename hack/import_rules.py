"""The import-linter contract type of braid's import rules (pyproject.toml, ``make lint``).

A ``forbidden`` contract checks the import statements written (in functions too); Python loads
more than that: importing ``a.b.c`` first runs the packages ``a`` and ``a.b``. So this type
adds, before checking, an import of each module's parent package to the graph, and a rule
then holds for what importing a module actually loads (``braid.nad.netconf`` imports
``braid.cni.config``, and with it runs ``braid/cni/__init__.py`` and whatever that imports).
The graph leaves out ``if TYPE_CHECKING:`` imports (pyproject.toml), which never run.

grimp's graph holds the modules it found as source files: a compiled extension module
(``braid._native``) and the imports of it are not in it. ``extension_protected`` (a
``protected`` contract) reads each module's source for them and adds them first.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.protected import ProtectedContract
from importlinter.domain.contract import ContractCheck


def add_parent_packages(graph: ImportGraph) -> None:
    """Adds ``module -> its parent package`` for every module of the graph (idempotent)."""
    for module in list(graph.modules):
        parent, _, _ = module.rpartition(".")
        if parent and parent in graph.modules:
            graph.add_import(importer=module, imported=parent)


class LoadedForbiddenContract(ForbiddenContract):
    """``forbidden``, over what importing a module loads (its parent packages' ``__init__``
    included)."""

    type_name = "loaded_forbidden"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        add_parent_packages(graph)
        return super().check(graph, verbose)

    def render_broken_contract(self, check: ContractCheck) -> None:
        super().render_broken_contract(check)
        output.print_error(
            "(A link 'module -> its package ()' is Python running the package's __init__ first.)",
            bold=False,
        )
        output.new_line()


def source_file(module: str) -> Path | None:
    """The source file of ``module`` (found from its top-level package, which is not run)."""
    root, _, rest = module.partition(".")
    spec = importlib.util.find_spec(root)
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(
        *rest.split(".") if rest else ()
    )
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements under ``node``, functions' included, ``if TYPE_CHECKING:``'s not."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child):
            yield from (n for sub in child.orelse for n in _import_nodes_of(sub))
        else:
            yield from _import_nodes(child)


def _import_nodes_of(node: ast.stmt) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _import_nodes(node)


def imported_names(module: str, path: Path) -> Iterator[tuple[str, int, str]]:
    """``(module or module.name, line, line text)`` of each name ``module`` imports."""
    text = path.read_text()
    lines = text.splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _import_nodes(ast.parse(text)):
        line = lines[node.lineno - 1].strip()
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            yield name, node.lineno, line


class ExtensionProtectedContract(ProtectedContract):
    """``protected``, for compiled extension modules, which grimp's graph leaves out: each
    import of one (``import braid._native.cni``, ``from braid import _native``, ``from
    braid._native import cni``) is added to the graph as an import of the extension module."""

    type_name = "extension_protected"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        extensions = [e.expression for e in self.protected_modules]  # type: ignore[attr-defined]
        for extension in extensions:
            graph.add_module(extension)
        for module in sorted(graph.modules):
            path = source_file(module)
            if path is None:
                continue
            for name, line_number, line in imported_names(module, path):
                for extension in extensions:
                    if name == extension or name.startswith(extension + "."):
                        graph.add_import(
                            importer=module,
                            imported=extension,
                            line_number=line_number,
                            line_contents=line,
                        )
        return super().check(graph, verbose)
