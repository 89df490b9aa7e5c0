"""``braidctl bench``: what braid costs on this node, on its own plugins and networks.

Runs one network (``--conflist FILE`` or ``--nad FILE``) for a pod with ``--extra-networks``
more attachments of it, in paired rounds: each round runs VERSION, ADD, CHECK and DEL through
braid (``braid-thin``, or the ``braid`` shim and ``braidctl daemon`` with ``--mode thick``) and
the same delegates directly, in a random order, each call after a random pause; it reports the
medians and the median, its 95 % interval and the 90th percentile of the per-round
differences, then a burst of pods (and the daemon's resident size during it). ``--mode
compare`` runs braid-thin, braid thick and Multus thin (``--multus PATH``) against the same
delegates in the same rounds, for each pod size of ``--extra-networks 0,2``, and the delegates
again as the noise floor (``braid.bench.compare``). Everything runs
in network namespaces it makes and removes, whatever ends the run. Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from braid.commands.args import add_output_option, existing_file, write_data
from braid.commands.bench_plan import DEFAULT_BURST, DEFAULT_CNI_PATH, extra_counts, plan_of
from braid.errors import INVALID_ENVIRONMENT, CniError

MODES = ("thin", "thick", "compare")


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``."""

    def check(value: str) -> int:
        try:
            found = int(value)
        except ValueError:
            found = low - 1
        if not low <= found <= high:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a whole number from {low} to {high}"
            )
        return found

    return check


def directory(value: str) -> str:
    if not Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a directory; pass --cni-path DIR")
    return value


def json_target(value: str) -> str:
    """An argparse ``type``: a file to write, in a directory that exists (checked before the
    run, not after it)."""
    path = Path(value)
    if path.is_dir() or not path.absolute().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a file in an existing directory")
    return value


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``braidctl bench``."""
    parser = subparsers.add_parser(
        "bench",
        help="measure braid's cost over the node's own plugins (paired rounds, a burst)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--conflist",
        metavar="FILE",
        type=existing_file("--conflist"),
        help="the network to measure: a CNI conflist (or conf) file",
    )
    source.add_argument(
        "--nad",
        metavar="FILE",
        type=existing_file("--nad"),
        help="the network to measure: a NetworkAttachmentDefinition (YAML or JSON) with "
        "spec.config",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="thin",
        help="thin: braid-thin; thick: the braid shim and braidctl daemon; compare: both, "
        "and Multus thin with --multus, against the same delegates in the same rounds, with "
        "the delegates run again as the noise floor",
    )
    parser.add_argument(
        "--cni-path",
        metavar="DIR",
        type=directory,
        default=None,
        help=f"the plugins' directory (default: $CNI_PATH's first, else {DEFAULT_CNI_PATH})",
    )
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=bounded(1, 10000),
        default=40,
        help="paired rounds (1-10000, default 40)",
    )
    parser.add_argument(
        "--extra-networks",
        metavar="N[,N...]",
        type=extra_counts,
        default=None,
        help="more attachments of the network per pod, net1... (0-16, default 0); compare "
        "mode takes several, each pod size measured in the same rounds (default 0,2)",
    )
    parser.add_argument(
        "--burst",
        metavar="N",
        type=bounded(0, 1000),
        default=None,
        help="pods in the burst, each in a namespace of its own (0-1000; 0: none; default "
        f"{DEFAULT_BURST}; compare mode runs none)",
    )
    parser.add_argument(
        "--parallel",
        metavar="P",
        type=bounded(1, 256),
        default=4,
        help="calls at once in the burst (1-256, default 4)",
    )
    parser.add_argument(
        "--phase-spread-ms",
        metavar="MS",
        type=bounded(0, 1000),
        default=20,
        help="the random pause before each timed call, at most (0-1000 ms, "
        "default 20; 0 runs the calls back to back)",
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="leave CHECK out (a plugin's CHECK may fail with the same network attached twice: "
        "bridge compares its bridge's MAC address with the one ADD saw)",
    )
    parser.add_argument(
        "--concurrency",
        metavar="N",
        type=bounded(1, 256),
        default=None,
        help="thick mode: the daemon's --concurrency (default: its own)",
    )
    parser.add_argument(
        "--thin",
        metavar="PATH",
        default=None,
        help="the braid-thin to measure (default: beside this braidctl)",
    )
    parser.add_argument(
        "--shim",
        metavar="PATH",
        default=None,
        help="the braid shim to measure (default: beside this braidctl)",
    )
    parser.add_argument(
        "--multus",
        metavar="PATH",
        default=None,
        help="compare mode: Multus thin's multus binary, measured as a third side",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        type=json_target,
        default=None,
        help="also write the figures as JSON to FILE",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="thick mode: print the per-phase medians of the paired rounds: the shim's "
        "start and exit, the daemon's segments and the engine's phases (braidctl daemon "
        "--trace)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_output_option(parser)
    parser.set_defaults(handler=run_bench)


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise KeyboardInterrupt


def run_bench(args: argparse.Namespace) -> int:
    # The measuring code is imported here, not at registration: `braidctl --help` stays light.
    from braid.bench.daemon import daemon_command  # noqa: PLC0415
    from braid.bench.report import document, text  # noqa: PLC0415
    from braid.bench.run import run  # noqa: PLC0415
    from braid.bench.spawn import CallFailed  # noqa: PLC0415
    from braid.version import package_version  # noqa: PLC0415

    concurrency = args.concurrency
    plan = plan_of(args, lambda socket_dir: daemon_command(socket_dir, concurrency))
    before = os.getloadavg()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        outcome = run(plan, (lambda _: None) if args.quiet else _progress)
    except KeyboardInterrupt:
        sys.stderr.write("braidctl bench: interrupted; its namespaces and files are removed\n")
        return 130
    except CallFailed as exc:
        raise CniError(INVALID_ENVIRONMENT, f"a call failed: {exc}") from None
    except RuntimeError as exc:  # the daemon did not start
        raise CniError(INVALID_ENVIRONMENT, str(exc)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    doc = document(
        plan, outcome, version=package_version(), load_before=before, load_after=os.getloadavg()
    )
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    write_data(doc, args.output, text)
    return 0


def _progress(line: str) -> None:
    sys.stderr.write(f"braidctl bench: {line}\n")
    sys.stderr.flush()
