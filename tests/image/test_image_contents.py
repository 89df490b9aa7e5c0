"""The image's root filesystem: the shim, braidctl in the virtualenv, Debian's python3 and the
network tools, each run from the unpacked image (chroot, the image's own environment); what is
left out (kubernetes, pip, documentation, apt's lists, logs, the build machine's files); and
the byte-code, compiled so that starting braid writes none."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from image_archive import REQUIREMENTS, SHIM_DIR, ImageRunner, OciArchive

SITE = "opt/braid/lib/python3.11/site-packages"


def layer_names(image: OciArchive) -> set[str]:
    return {m.name for members in image.layer_members for m in members}


@pytest.mark.parametrize(
    "paths",
    [
        ("usr/local/bin/braid",),
        ("usr/local/bin/braid-full",),
        ("opt/braid/bin/braidctl",),
        ("opt/braid/bin/braid-thin",),
        ("opt/braid/bin/python3",),
        ("usr/bin/python3",),
        ("usr/sbin/iptables", "usr/sbin/iptables-nft"),
        ("usr/sbin/nft",),
        ("usr/sbin/ip", "usr/bin/ip"),
        ("etc/ssl/certs/ca-certificates.crt",),
    ],
)
def test_the_files_a_node_needs_are_in_the_layers(
    image: OciArchive, paths: tuple[str, ...]
) -> None:
    assert layer_names(image) & set(paths), f"none of {paths} in the image"


@pytest.mark.parametrize("name", ["braid", "braid-full"])
def test_the_shim_is_the_built_one_and_executable(rootfs: Path, name: str) -> None:
    shipped = rootfs / "usr/local/bin" / name
    mode = shipped.lstat().st_mode
    assert stat.S_ISREG(mode)
    assert stat.S_IMODE(mode) == 0o755
    assert shipped.read_bytes() == (SHIM_DIR / name).read_bytes(), f"target/release/{name}"
    # The wheel's copy in the virtualenv is the same file.
    assert (rootfs / "opt/braid/bin" / name).stat().st_ino == shipped.stat().st_ino


def test_no_kubernetes_and_no_pip(image: OciArchive, run_in_image: ImageRunner) -> None:
    names = layer_names(image)
    assert not {n for n in names if re.search(r"/(dist|site)-packages/kubernetes\b", n)}
    assert not {n for n in names if re.search(r"/(dist|site)-packages/pip\b", n)}
    listed = run_in_image(
        "/opt/braid/bin/python",
        "-c",
        "import importlib.metadata as m, json;"
        "print(json.dumps([d.metadata['Name'] for d in m.distributions()]))",
    ).stdout
    installed = {_normalized(name) for name in json.loads(listed)}
    pinned = {
        _normalized(line.split("==")[0])
        for line in REQUIREMENTS.read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert installed == pinned | {"braid-cni"}
    assert "kubernetes" not in installed


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_trimmed_of_docs_apt_lists_logs_and_the_build_machines_files(image: OciArchive) -> None:
    names = layer_names(image)
    assert not [n for n in names if n.startswith(("usr/share/man/", "usr/share/info/"))]
    assert not [n for n in names if n.startswith("usr/share/locale/")]
    docs = [
        m.name
        for members in image.layer_members
        for m in members
        if m.name.startswith("usr/share/doc/") and m.isreg()
    ]
    assert docs
    # Only the licences are kept, and braid's SBOM (docs/supply-chain.md).
    assert [n for n in docs if not n.endswith("/copyright")] == [
        "usr/share/doc/braid/sbom.cdx.json"
    ]
    assert not [n for n in names if n.startswith(("var/lib/apt/", "var/cache/apt/"))]
    assert not [n for n in names if n.startswith("var/log/")]
    assert not {"etc/hostname", "etc/hosts", "etc/resolv.conf"} & names
    assert "var/lib/dpkg/status" in names  # what scanners read to list the packages


def test_braidctl_runs(run_in_image: ImageRunner) -> None:
    done = run_in_image("braidctl", "--help")
    assert done.stdout.startswith("usage: braidctl")
    assert "daemon" in done.stdout
    assert "install" in done.stdout
    run_in_image("braidctl", "daemon", "--help")
    run_in_image("braid-thin", "--help", check=False)  # present and starts; its own usage
    run_in_image("/opt/braid/bin/python", "-c", "import braid._native, braid.commands.daemon")


def test_the_devices_extra_loads(run_in_image: ImageRunner) -> None:
    """grpcio's extension needs libstdc++: without it every pod selecting a NAD with a
    resourceName is refused (docs/devices.md)."""
    run_in_image(
        "/opt/braid/bin/python",
        "-c",
        "import grpc, braid.k8s.podresources.client, braid.k8s.podresources.api_pb2_grpc",
    )


@pytest.mark.parametrize("shim", ["braid", "/usr/local/bin/braid", "/usr/local/bin/braid-full"])
def test_the_shim_answers_version(run_in_image: ImageRunner, shim: str) -> None:
    done = run_in_image(shim, env={"CNI_COMMAND": "VERSION"})
    version = json.loads(done.stdout)
    assert version["cniVersion"]
    assert {"0.4.0", "1.0.0"} <= set(version["supportedVersions"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("iptables", "--version"), r"^iptables v1\.8\.\d+ \(nf_tables\)"),
        (("ip6tables", "--version"), r"^ip6tables v1\.8\.\d+ \(nf_tables\)"),
        (("nft", "--version"), r"^nftables v1\."),
        (("ip", "-V"), r"^ip utility, iproute2-"),
        (("python3", "--version"), r"^Python 3\.11\."),
        (("openssl", "version"), r"^OpenSSL 3\."),  # the NAD webhook's certificates
    ],
)
def test_debians_tools_run(run_in_image: ImageRunner, argv: tuple[str, ...], expected: str) -> None:
    done = run_in_image(*argv)
    assert re.search(expected, done.stdout), done.stdout


def test_the_virtualenv_runs_debians_python(rootfs: Path, run_in_image: ImageRunner) -> None:
    assert (rootfs / "opt/braid/bin/python3").readlink() == Path("/usr/bin/python3")
    cfg = (rootfs / "opt/braid/pyvenv.cfg").read_text()
    assert "home = /usr/bin" in cfg
    assert "include-system-site-packages = false" in cfg
    done = run_in_image("python", "-c", "import sys; print(sys.prefix, sys.base_prefix)")
    assert done.stdout.split() == ["/opt/braid", "/usr"]


def test_starting_braid_writes_no_bytecode(
    image: OciArchive, rootfs: Path, run_in_image: ImageRunner
) -> None:
    """Every module braid and the interpreter import has its .pyc in the image, compiled as
    unchecked-hash (no timestamp to go stale): starting writes nothing."""
    run_in_image("braidctl", "--help")
    run_in_image(
        "/opt/braid/bin/python",
        "-c",
        "import braid.commands.braidctl, braid.commands.daemon, braid.k8s.client,"
        " braid.engine.entry, yaml, msgspec, prometheus_client, urllib3",
    )
    shipped = {n for n in layer_names(image) if n.endswith(".pyc")}
    present = {str(p.relative_to(rootfs)) for p in rootfs.rglob("*.pyc")}
    assert present == shipped, f"written at start-up: {sorted(present - shipped)[:10]}"
    for name in (
        "opt/braid/lib/python3.11/site-packages/braid/commands/__pycache__/braidctl.cpython-311.pyc",
        "usr/lib/python3.11/__pycache__/os.cpython-311.pyc",
    ):
        flags = int.from_bytes((rootfs / name).read_bytes()[4:8], "little")
        assert flags == 0b01, f"{name}: not unchecked-hash (flags {flags:#b})"
    assert f"{SITE}/braid/commands/__pycache__/braidctl.cpython-311.pyc" in shipped
