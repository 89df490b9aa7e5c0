"""Outside ``braid.config`` a layered key is read through its view (``config.engine.dirs
.cni_dir``), never as the flat document's attribute (``config.cni_dir``): the views are the
keys' one declaration, and mypy sees only the call's keys on ``BraidConfig``. This scan
finds what mypy cannot, a flat read on an untyped value.

A whole configuration is: a name annotated ``BraidConfig``, any ``.config`` attribute or
``config()`` call (the engine context's, a loaded configuration's, the daemon's current one),
and a local name assigned from one of these."""

from __future__ import annotations

import ast
from pathlib import Path

import braid
from braid.config.keys import LAYERED

SOURCE = Path(braid.__file__).parent
FLAT = frozenset(k.attribute for k in LAYERED)


def _is_config_annotation(node: ast.expr | None) -> bool:
    if node is None:
        return False
    text = ast.unparse(node).strip("'\"")
    return text.split(".")[-1].split("|")[0].strip() == "BraidConfig"


class _Reads(ast.NodeVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.found: list[tuple[int, str]] = []

    def whole(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return node.attr == "config"
        if isinstance(node, ast.Call):
            func = node.func
            return (isinstance(func, ast.Attribute) and func.attr == "config") or (
                isinstance(func, ast.Name) and func.id == "config"
            )
        return False

    def visit_arg(self, node: ast.arg) -> None:
        if _is_config_annotation(node.annotation):
            self.names.add(node.arg)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and _is_config_annotation(node.annotation):
            self.names.add(node.target.id)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.whole(node.value):
            self.names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FLAT and self.whole(node.value):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)


def flat_reads(text: str) -> list[tuple[int, str]]:
    reads = _Reads()
    reads.visit(ast.parse(text))
    return reads.found


def test_no_flat_read_outside_braid_config() -> None:
    found = [
        f"{path.relative_to(SOURCE.parent)}:{line}: {read}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path.parent.name != "config"
        for line, read in flat_reads(path.read_text())
    ]
    assert not found, "read these keys through their view (braid.config.layers):\n" + "\n".join(
        found
    )


def test_the_scan_finds_each_kind_of_flat_read() -> None:
    """The shapes the scan knows, each caught."""
    code = (
        "def a(config: BraidConfig, other) -> None:\n"
        "    config.cni_dir\n"
        "    other.cni_dir\n"
        "def b(ctx, loaded, operator):\n"
        "    ctx.config.hot_plug\n"
        "    loaded.config.log_level\n"
        "    cfg = operator.config\n"
        "    cfg.max_selections\n"
        "    operator.config().readinessindicatorfile\n"
        "    ctx.config.engine.dirs.cni_dir\n"
    )
    assert [read for _, read in flat_reads(code)] == [
        "config.cni_dir",
        "ctx.config.hot_plug",
        "loaded.config.log_level",
        "cfg.max_selections",
        "operator.config().readinessindicatorfile",
    ]
