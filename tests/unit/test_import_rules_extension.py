"""The import rule for a compiled extension module (hack/import_rules.py,
``extension_protected``): grimp's graph has no compiled module, so the contract reads each
module's imports itself. A package on disk whose "extension" has no source file, as
``braid._native`` has none, and every way of importing it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import grimp
import pytest

RULES = Path(__file__).resolve().parents[2] / "hack" / "import_rules.py"

MODULES = {
    "__init__.py": "",
    "plain.py": "from extpkg import _ext\n",
    "dotted.py": "import extpkg._ext.sub\n",
    "in_function.py": "def f() -> None:\n    from extpkg._ext import sub\n",
    "relative.py": "from ._ext.sub import name\n",
    "only_typing.py": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from extpkg import _ext\n"
    ),
    "allowed.py": "from extpkg._ext.sub import name\n",
    "unrelated.py": "from extpkg import plain\n",
}


def _rules() -> ModuleType:
    spec = importlib.util.spec_from_file_location("braid_test_import_rules", RULES)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_import_of_the_extension_but_the_allowed_breaks_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "extpkg"
    package.mkdir()
    for name, text in MODULES.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "extpkg", raising=False)
    graph = grimp.build_graph("extpkg", exclude_type_checking_imports=True, cache_dir=None)
    assert "extpkg._ext" not in graph.modules  # what the contract type is for
    contract = _rules().ExtensionProtectedContract(
        name="only allowed imports extpkg._ext",
        session_options={"root_packages": ["extpkg"]},
        contract_options={
            "protected_modules": ["extpkg._ext"],
            "allowed_importers": ["extpkg.allowed"],
            "as_packages": "false",
        },
    )
    check = contract.check(graph, verbose=False)
    assert not check.kept
    (broken,) = check.metadata["illegal_imports"]
    links = {(link["importer"], link["line_numbers"]) for link in broken.illegal_links}
    assert links == {
        ("extpkg.plain", (1,)),
        ("extpkg.dotted", (1,)),
        ("extpkg.in_function", (2,)),
        ("extpkg.relative", (1,)),
    }
