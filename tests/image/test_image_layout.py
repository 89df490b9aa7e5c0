"""The archive is an OCI image layout a runtime accepts: every descriptor's digest and size
match its blob, the config describes the layers and the command, and the tars are written
deterministically (fixed times, no owner names, sorted entries, no gzip name or time)."""

from __future__ import annotations

import datetime
import json
import subprocess
import tarfile

from image_archive import CMD, EXPECTED_NAME, OciArchive, gunzip, sha256

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def epoch(rfc3339: str) -> int:
    moment = datetime.datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ")
    return int(moment.replace(tzinfo=datetime.UTC).timestamp())


def test_layout_has_oci_layout_index_and_only_referenced_blobs(image: OciArchive) -> None:
    assert json.loads(image.files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    assert image.index["schemaVersion"] == 2
    manifest_digest = image.manifest_descriptor["digest"]
    referenced = {
        manifest_digest,
        image.manifest["config"]["digest"],
        *(layer["digest"] for layer in image.manifest["layers"]),
    }
    blobs = {name for name in image.files if name.startswith("blobs/")}
    assert blobs == {"blobs/sha256/" + d.removeprefix("sha256:") for d in referenced}
    for name in blobs:
        assert sha256(image.files[name]) == "sha256:" + name.rsplit("/", 1)[1], name
    assert set(image.members) == {"oci-layout", "index.json", "blobs", "blobs/sha256", *blobs}


def test_index_names_the_image_for_containerd_and_podman(image: OciArchive) -> None:
    descriptor = image.manifest_descriptor
    assert descriptor["mediaType"] == MANIFEST
    assert descriptor["size"] == len(image.blob(descriptor["digest"]))
    assert descriptor["annotations"] == {
        "io.containerd.image.name": EXPECTED_NAME,
        "org.opencontainers.image.ref.name": EXPECTED_NAME.rsplit(":", 1)[1],
    }
    assert descriptor["platform"] == {"architecture": image.config["architecture"], "os": "linux"}


def test_manifest_descriptors_match_their_blobs(image: OciArchive) -> None:
    manifest = image.manifest
    assert manifest["schemaVersion"] == 2
    assert manifest["mediaType"] == MANIFEST
    assert manifest["config"]["mediaType"] == CONFIG
    assert manifest["config"]["size"] == len(image.blob(manifest["config"]["digest"]))
    assert len(manifest["layers"]) == 2  # Debian, then braid
    for layer in manifest["layers"]:
        assert layer["mediaType"] == LAYER
        assert layer["size"] == len(image.blob(layer["digest"]))


def test_config_runs_the_daemon_with_the_virtualenv_first_on_path(image: OciArchive) -> None:
    config = image.config
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert (config["os"], config["architecture"]) == ("linux", arch)
    assert config["config"]["Cmd"] == CMD
    assert "Entrypoint" not in config["config"]
    env = dict(item.split("=", 1) for item in config["config"]["Env"])
    path = env["PATH"].split(":")
    assert path[0] == "/opt/braid/bin"
    assert {"/usr/local/bin", "/usr/sbin", "/usr/bin"} <= set(path)
    labels = config["config"]["Labels"]
    assert labels["org.opencontainers.image.title"] == "braid"
    assert labels["org.opencontainers.image.version"]


def test_diff_ids_and_history_describe_the_layers(image: OciArchive) -> None:
    config = image.config
    assert config["rootfs"]["type"] == "layers"
    assert config["rootfs"]["diff_ids"] == [sha256(gunzip(blob)) for blob in image.layers]
    base, braid = config["history"]
    assert "bookworm" in base["created_by"]
    assert braid["created_by"].startswith("braid ")
    assert braid["created"] == config["created"]
    assert epoch(base["created"]) > 0  # RFC 3339, UTC


def test_layers_are_gzip_without_name_or_time(image: OciArchive) -> None:
    for blob in image.layers:
        assert blob[:3] == b"\x1f\x8b\x08"  # gzip, deflate
        assert blob[3] == 0, "no FNAME/FEXTRA/FCOMMENT flag"
        assert blob[4:8] == b"\0\0\0\0", "mtime 0"


def test_layer_entries_are_sorted_with_fixed_times_and_no_owner_names(
    image: OciArchive,
) -> None:
    created = [epoch(entry["created"]) for entry in image.config["history"]]
    for layer, (members, time) in enumerate(zip(image.layer_members, created, strict=True)):
        names = [m.name for m in members]
        assert names == sorted(names, key=lambda n: [p.encode() for p in n.split("/")])
        assert len(set(names)) == len(names)
        for member in members:
            assert (member.uname, member.gname) == ("", ""), member.name
            assert member.type in (
                tarfile.REGTYPE,
                tarfile.DIRTYPE,
                tarfile.SYMTYPE,
                tarfile.LNKTYPE,
            ), member.name
            assert ".wh." not in member.name  # no whiteouts: each layer only adds
            assert not member.name.startswith(("/", "./", "dev/", "proc/", "sys/"))
            if layer == 0:
                assert member.mtime <= time, member.name  # clamped: Debian's own times kept
            else:
                assert member.mtime == time, member.name
                assert (member.uid, member.gid) == (0, 0), member.name


def test_archive_members_have_fixed_times_and_owners(image: OciArchive) -> None:
    created = epoch(image.config["created"])
    for member in image.members.values():
        assert member.mtime == created, member.name
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
