"""braid: a Kubernetes multi-network CNI plugin and a CNI runtime library."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
