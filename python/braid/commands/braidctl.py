"""``braidctl``: braid's command line.

Each subcommand's module registers its own parser; a command line naming a subcommand imports
that module alone (``braidctl validate`` imports neither the daemon nor its metrics), and only
``braidctl`` without one (``--help``, ``--version``, a mistake) imports them all to list them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from braid.errors import CniError
from braid.version import package_version

# The module of each subcommand and the function that registers it, in `braidctl --help` order.
_REGISTRARS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("cni",), "braid.commands.cni", "add_parser"),
    (("demo-cni",), "braid.commands.demo_cni", "add_parser"),
    (("demo",), "braid.commands.demo", "add_parser"),
    (("attach", "detach", "check", "explain", "status"), "braid.commands.pods", "add_parsers"),
    (("validate",), "braid.commands.validate", "add_parser"),
    (("nad-webhook",), "braid.commands.nad_webhook", "add_parser"),
    (("daemon",), "braid.commands.daemon", "add_parser"),
    (("install",), "braid.commands.install", "add_parser"),
    (("doctor",), "braid.commands.doctor", "add_parser"),
    (("bench",), "braid.commands.bench", "add_parser"),
    (("migrate",), "braid.commands.migrate", "add_parser"),
    (("completion",), "braid.commands.completion", "add_parser"),
)


def _subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (``braidctl``'s own
    options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(subcommand: str | None = None) -> argparse.ArgumentParser:
    """``braidctl``'s parser; with ``subcommand`` (a known one), only that subcommand's module
    is imported and registered."""
    parser = argparse.ArgumentParser(prog="braidctl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"braidctl {package_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    wanted = [r for r in _REGISTRARS if subcommand in r[0]] or list(_REGISTRARS)
    for _, module, function in wanted:
        getattr(importlib.import_module(module), function)(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    args = build_parser(_subcommand(args_in)).parse_args(args_in)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except (CniError, OSError) as exc:
        # A subcommand reports what it expects; anything else a file or the system refused
        # still ends in one line, not a traceback.
        what = exc.msg if isinstance(exc, CniError) else str(exc)
        sys.stderr.write(f"braidctl {args.command}: error: {what}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
