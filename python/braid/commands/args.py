"""What ``braidctl``'s subcommands share on their command line: file arguments checked while
parsing (a missing file is a usage error naming its option, exit status 2) and ``-o
text|json|yaml`` for the subcommands whose output is data."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUTPUT_FORMATS = ("text", "json", "yaml")


def existing_file(option: str) -> Callable[[str], str]:
    """An argparse ``type``: the path unchanged when it names a readable file, else a usage
    error saying so and how to pass another. argparse applies it to a string default too, so
    a default path that does not exist on this machine is reported the same way."""

    def check(value: str) -> str:
        path = Path(value)
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise argparse.ArgumentTypeError(f"{value} {what}; pass {option} PATH")
        try:
            with path.open("rb"):
                pass
        except OSError as exc:
            raise argparse.ArgumentTypeError(
                f"{value} cannot be read ({exc.strerror}); pass {option} PATH"
            ) from exc
        return value

    return check


def seconds(*, zero: bool) -> Callable[[str], float]:
    """An argparse ``type``: a finite number of seconds, above zero (or zero when ``zero``)."""

    def check(value: str) -> float:
        try:
            found = float(value)
        except ValueError:
            found = math.nan
        if not math.isfinite(found) or found < 0 or (found == 0 and not zero):
            wanted = "zero or more" if zero else "more than zero"
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds ({wanted})")
        return found

    return check


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        default="text",
        help="text (the default) for people; json or yaml for programs",
    )


def write_data(data: Any, output: str, text: Callable[[Any], str]) -> None:
    """Writes ``data`` to stdout as ``output`` asks: ``text(data)`` for text, else the same
    data as JSON or YAML."""
    if output == "json":
        rendered = json.dumps(data, indent=2) + "\n"
    elif output == "yaml":
        import yaml  # noqa: PLC0415 - only -o yaml pays for it

        rendered = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    else:
        rendered = text(data)
    sys.stdout.write(rendered)


def pretty_json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"
