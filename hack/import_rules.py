"""The import-linter contract type of braid's import rules (pyproject.toml, ``make lint``).

A ``forbidden`` contract checks the import statements written (in functions too); Python loads
more than that: importing ``a.b.c`` first runs the packages ``a`` and ``a.b``. So this type
adds, before checking, an import of each module's parent package to the graph, and a rule
then holds for what importing a module actually loads (``braid.nad.netconf`` imports
``braid.cni.config``, and with it runs ``braid/cni/__init__.py`` and whatever that imports).
The graph leaves out ``if TYPE_CHECKING:`` imports (pyproject.toml), which never run.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.forbidden import ForbiddenContract
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
