"""braid's version and build, and the shim's as it answers VERSION.

The shim puts braid's package version and build in its VERSION answer, after the CNI spec's
``cniVersion`` and ``supportedVersions``, as ``braidVersion`` and ``braidBuild``
(``braid_wire::version``; CNI clients ignore keys they do not know). The daemon reads the
shim's at start (a log line and ``braid_shim_info``); ``braidctl doctor`` compares it with the
daemon's, which the daemon's health answer carries.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import braid
from braid.version import BUILD

log = logging.getLogger("braid.daemon")

# The shim's VERSION answer is about 200 bytes; a file that says more is no braid shim.
MAX_ANSWER_BYTES = 4096
ANSWER_SECONDS = 5.0
# libcni's variables for VERSION (`dummy` for what it does not know).
VERSION_ENV = {
    "CNI_COMMAND": "VERSION",
    "CNI_CONTAINERID": "dummy",
    "CNI_NETNS": "dummy",
    "CNI_IFNAME": "dummy",
    "CNI_PATH": "dummy",
}


@dataclass(frozen=True)
class BraidVersion:
    """A package version and the build it came from (``unknown`` when not baked in)."""

    version: str
    build: str

    def __str__(self) -> str:
        return f"{self.version} (build {self.build})"


def own_version() -> BraidVersion:
    """This process's braid: the package's version and the build of its Rust extension."""
    return BraidVersion(braid.__version__, BUILD)


def shim_version(path: str, timeout: float = ANSWER_SECONDS) -> BraidVersion:
    """Runs the shim at ``path`` (as this process reaches it) with ``CNI_COMMAND=VERSION`` and
    reads braid's version from its answer. Raises ``ValueError`` saying what was wrong: not
    executable, no answer within ``timeout``, an answer too long, not JSON, or without
    ``braidVersion`` (a shim older than versions)."""
    try:
        ran = subprocess.run(
            [path],
            env=VERSION_ENV,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValueError(f"{path} does not run: {exc}") from None
    out = ran.stdout
    if len(out) > MAX_ANSWER_BYTES:
        raise ValueError(f"{path} answered VERSION with {len(out)} bytes: not braid's shim")
    try:
        answer = json.loads(out)
    except ValueError:
        raise ValueError(f"{path} answered VERSION with no JSON (exit {ran.returncode})") from None
    version = answer.get("braidVersion") if isinstance(answer, dict) else None
    if not isinstance(version, str) or not version:
        raise ValueError(f"{path} does not say its braid version (a shim older than 0.1.0)")
    build = answer.get("braidBuild")
    return BraidVersion(version, build if isinstance(build, str) and build else "unknown")


def mismatch(shim: BraidVersion, daemon: BraidVersion) -> str:
    """Why ``shim`` and ``daemon`` do not belong together (``""`` when they do): another
    package version. Two builds of one version (development builds) belong together: the
    protocol between them is the version's."""
    if shim.version != daemon.version:
        return f"the shim is braid {shim}, the daemon braid {daemon}"
    return ""


def report_shim(path: str, shown: str, report: Callable[[str, str], None]) -> None:
    """Logs the version of the shim at ``path`` (``shown``: the node's path) and hands it to
    ``report`` (the metrics' ``braid_shim_info``); a warning with the fix when it is not the
    daemon's."""
    own = own_version()
    if not Path(path).is_file():
        log.info("no shim at %s to read the version of", shown)
        return
    try:
        shim = shim_version(path)
    except ValueError as exc:
        log.warning("the shim's version is unknown: %s; reinstall it (braidctl install)", exc)
        report("unreadable", "unreadable")
        return
    report(shim.version, shim.build)
    why = mismatch(shim, own)
    if why:
        log.warning(
            "%s: %s; reinstall the shim (braidctl install) or roll the DaemonSet", shown, why
        )
    else:
        log.info("shim %s: braid %s; daemon: braid %s", shown, shim, own)
