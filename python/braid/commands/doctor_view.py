"""What ``braidctl doctor`` reports and what it looks at: a ``Finding`` per check, and the node
as braid sees it (``NodeView``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from braid.cni.hostroot import HostRoot
from braid.config.schema import BraidConfig
from braid.daemon.conflist import BRAID_CONFLIST
from braid.daemon.operator_config import OperatorConfig

# ``ok``: checked and right; ``fail``: wrong (``fix`` says what to do); ``none``: nothing to
# check (the detail says why), which is no failure.
Status = Literal["ok", "fail", "none"]
# The keys of each finding in ``-o json``/``-o yaml``, in this order (docs/operations.md).
FINDING_KEYS = ("check", "status", "ok", "detail", "fix")


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        """No failure (``none`` included)."""
        return self.status != "fail"

    def as_data(self) -> dict[str, str | bool]:
        return {
            "check": self.check,
            "status": self.status,
            "ok": self.ok,
            "detail": self.detail,
            "fix": self.fix,
        }


def good(check: str, detail: str) -> Finding:
    return Finding(check, "ok", detail)


def failed(check: str, detail: str, fix: str) -> Finding:
    return Finding(check, "fail", detail, fix)


def nothing(check: str, detail: str) -> Finding:
    return Finding(check, "none", detail)


@dataclass
class NodeView:
    """The node as braid sees it: the operator's configuration, the node's root and its CNI
    configuration directory (the node's path)."""

    operator: OperatorConfig
    root: HostRoot | None
    conf_dir: str

    def local(self, path: str) -> str:
        return path if self.root is None else self.root.local(path)

    @property
    def config(self) -> BraidConfig:
        """The operator's configuration, as the node names its files."""
        return self.operator.loaded.config

    def conflist(self) -> Path:
        return Path(self.local(self.conf_dir)) / BRAID_CONFLIST
