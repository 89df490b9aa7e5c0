"""``braidctl``: braid's command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from braid import demo, doctor, install, podctl, validate
from braid.cni import command as cni_command
from braid.cni import demo as cni_demo
from braid.daemon import command as daemon_command
from braid.version import package_version


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="braidctl", description=__doc__)
    parser.add_argument("--version", action="version", version=f"braidctl {package_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    cni_command.add_parser(subparsers)
    cni_demo.add_parser(subparsers)
    demo.add_parser(subparsers)
    podctl.add_parsers(subparsers)
    validate.add_parser(subparsers)
    daemon_command.add_parser(subparsers)
    install.add_parser(subparsers)
    doctor.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
