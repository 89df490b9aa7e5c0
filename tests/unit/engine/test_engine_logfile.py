"""``logFile`` rotation by ``logOptions``: lumberjack's names and limits, safe across processes."""

from __future__ import annotations

import gzip
import json
import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.config import LogOptions, load_braid_config
from braid.engine.logfile import RotatingLogFile, backup_name, compress, open_log_file
from braid.errors import CniError

MB = 1024 * 1024
WHEN = 1706702400.0  # 2024-01-31T12:00:00Z
STAMP = "2024-01-31T12-00-00.000"


def handler(path: Path, now: float = WHEN, **options: int | bool) -> RotatingLogFile:
    fd = open_log_file(str(path))
    assert fd is not None
    opts = msgspec.structs.replace(
        LogOptions(max_size=1, max_backups=0, max_age=0, compress=False), **options
    )
    found = RotatingLogFile(str(path), fd, opts, now=lambda: now)
    found.setFormatter(logging.Formatter("%(message)s"))
    return found


def emit(target: RotatingLogFile, message: str) -> None:
    target.handle(logging.makeLogRecord({"msg": message, "levelno": logging.ERROR}))


def test_backup_names_are_lumberjacks() -> None:
    assert backup_name("/var/log/braid.log", WHEN + 0.25) == (
        "/var/log/braid-2024-01-31T12-00-00.250.log"
    )
    assert backup_name("/var/log/braid", WHEN) == f"/var/log/braid-{STAMP}"
    assert backup_name("/l/a.b.log", WHEN) == f"/l/a.b-{STAMP}.log"


def test_the_file_rotates_before_a_line_would_take_it_beyond_max_size(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    target = handler(log)
    line = "x" * 999  # 1000 bytes with its newline
    for i in range(1100):
        emit(target, f"{i:05d}{line[5:]}")
    target.close()
    backup = tmp_path / f"braid-{STAMP}.log"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        backup.name,
        "braid.log",
        "braid.log.lock",
    ]
    assert backup.stat().st_size == 1048 * 1000 <= MB
    assert log.stat().st_size == (1100 - 1048) * 1000
    lines = backup.read_text().splitlines() + log.read_text().splitlines()
    assert [int(x[:5]) for x in lines] == list(range(1100))
    for path in (log, backup, tmp_path / "braid.log.lock"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_max_size_zero_is_lumberjacks_hundred_megabytes(tmp_path: Path) -> None:
    target = handler(tmp_path / "braid.log", max_size=0)
    assert target._max_bytes == 100 * MB


def fill(log: Path) -> None:
    log.write_text("y" * (MB - 10) + "\n")


def test_max_backups_keeps_the_newest(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    old = [f"braid-2024-01-0{d}T00-00-00.000.log" for d in range(1, 5)]
    for name in old:
        (tmp_path / name).write_text("old\n")
    (tmp_path / (old[0] + ".gz")).write_bytes(gzip.compress(b"old\n"))
    (tmp_path / "other-2024-01-01T00-00-00.000.log").write_text("not ours\n")
    fill(log)
    target = handler(log, max_backups=3)
    emit(target, "fresh line")
    target.close()
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {
        "braid.log",
        "braid.log.lock",
        f"braid-{STAMP}.log",
        old[3],
        old[2],
        "other-2024-01-01T00-00-00.000.log",
    }
    assert log.read_text() == "fresh line\n"


def test_max_age_removes_backups_older_by_modification_time(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    aged = tmp_path / "braid-2024-01-30T00-00-00.000.log"
    recent = tmp_path / "braid-2024-01-29T00-00-00.000.log.gz"
    aged.write_text("aged\n")
    recent.write_bytes(gzip.compress(b"recent\n"))
    os.utime(aged, (WHEN - 3 * 86400 - 1, WHEN - 3 * 86400 - 1))
    os.utime(recent, (WHEN - 3 * 86400 + 60, WHEN - 3 * 86400 + 60))
    fill(log)
    target = handler(log, max_age=3)
    emit(target, "fresh line")
    target.close()
    assert not aged.exists()
    assert recent.exists()
    assert (tmp_path / f"braid-{STAMP}.log").exists()


def wait_for(path: Path, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def wait_for_glob(folder: Path, pattern: str, seconds: float = 20.0) -> list[Path]:
    """The files matching ``pattern`` once no uncompressed backup is left beside them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = sorted(folder.glob(pattern))
        if found and not list(folder.glob("braid-*.log")):
            return found
        time.sleep(0.02)
    return sorted(folder.glob(pattern))


def test_compress_gzips_the_backup_in_the_background(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    fill(log)
    content = log.read_bytes()
    target = handler(log, compress=True)
    emit(target, "fresh line")
    target.close()
    packed = tmp_path / f"braid-{STAMP}.log.gz"
    wait_for(packed)
    deadline = time.monotonic() + 20
    while (tmp_path / f"braid-{STAMP}.log").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not (tmp_path / f"braid-{STAMP}.log").exists()
    assert gzip.decompress(packed.read_bytes()) == content
    assert stat.S_IMODE(packed.stat().st_mode) == 0o600
    assert log.read_text() == "fresh line\n"


def test_a_link_at_the_backup_name_is_neither_followed_nor_replaced(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("precious\n")
    link = tmp_path / f"braid-{STAMP}.log"
    link.symlink_to(elsewhere)
    fill(log)
    content = log.read_text()
    target = handler(log)
    emit(target, "fresh line")
    target.close()
    assert link.is_symlink()
    assert elsewhere.read_text() == "precious\n"
    assert (tmp_path / "braid-2024-01-31T12-00-00.001.log").read_text() == content


def test_compress_never_writes_through_a_link(tmp_path: Path) -> None:
    backup = tmp_path / f"braid-{STAMP}.log"
    backup.write_text("backup\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("precious\n")
    (tmp_path / f"{backup.name}.gz").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        compress(str(backup))
    assert elsewhere.read_text() == "precious\n"
    assert backup.read_text() == "backup\n"


def test_a_lock_file_that_is_a_link_disables_rotation_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "braid.log"
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "braid.log.lock").symlink_to(elsewhere)
    fill(log)
    target = handler(log)
    emit(target, "fresh line")
    target.close()
    assert not elsewhere.exists()
    assert log.read_text().endswith("\nfresh line\n")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "braid.log.lock" in captured.err


WRITER = """
import logging, sys
from braid.engine.logfile import open_log_file, RotatingLogFile
from braid.config.layers import LogOptions
path, tag = sys.argv[1], sys.argv[2]
opts = LogOptions(max_size=1, max_backups=0, max_age=0, compress=False)
handler = RotatingLogFile(path, open_log_file(path), opts)
handler.setFormatter(logging.Formatter("%(message)s"))
for i in range(4000):
    handler.handle(logging.makeLogRecord({"msg": f"{tag} {i:05d} " + "z" * 480}))
"""


def test_processes_writing_together_lose_no_line_across_rotations(tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), tag],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for tag in ("a", "b")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out, err) == (0, b"", b"")
    backups = sorted(tmp_path.glob("braid-*.log"))
    assert len(backups) >= 3  # 4 MB written, 1 MB each
    seen: dict[str, list[int]] = {"a": [], "b": []}
    width = len("a 00000 ") + 480 + 1
    for path in backups:  # each rotated when, and only when, the next line did not fit
        assert MB - width < path.stat().st_size <= MB
    assert log.stat().st_size <= MB
    for path in [*backups, log]:
        for line in path.read_text().splitlines():
            tag, number, _ = line.split(" ")
            seen[tag].append(int(number))
    assert seen == {"a": list(range(4000)), "b": list(range(4000))}


@pytest.mark.parametrize("key", ["maxAge", "maxSize", "maxBackups"])
def test_negative_log_options_are_error_7_naming_the_key(key: str) -> None:
    doc = {"type": "braid", "logOptions": {key: -1}}
    with pytest.raises(CniError) as caught:
        load_braid_config(msgspec.json.encode(doc))
    assert caught.value.code == 7
    assert f"`logOptions.{key}`" in caught.value.msg


@pytest.mark.parametrize("value", [1.5, "3", True])
def test_non_integer_log_options_are_error_7_naming_the_key(value: object) -> None:
    doc = {"type": "braid", "logOptions": {"maxBackups": value}}
    with pytest.raises(CniError) as caught:
        load_braid_config(msgspec.json.encode(doc))
    assert caught.value.code == 7
    assert "`logOptions.maxBackups`" in caught.value.msg


def test_zero_means_no_limit_and_is_accepted() -> None:
    doc = {"type": "braid", "logOptions": {"maxAge": 0, "maxSize": 0, "maxBackups": 0}}
    loaded = load_braid_config(msgspec.json.encode(doc))
    assert loaded.config.log_options == LogOptions(max_age=0, max_size=0, max_backups=0)


BRAID_THIN = Path(sys.executable).parent / "braid-thin"


def test_a_braid_thin_call_rotates_and_compresses_its_log_file(dirs: Any, tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    fill(log)
    content = log.read_bytes()
    stdin = dirs.stdin(
        logFile=str(log),
        logLevel="error",
        logToStderr=False,
        logOptions={"maxSize": 1, "compress": True},
        clusterNetwork="missing",
    )
    proc = subprocess.run(
        [str(BRAID_THIN)],
        env={**dirs.env("ADD"), "CNI_NETNS": "/nonexistent"},
        input=stdin,
        capture_output=True,
        check=False,
        timeout=20,
    )
    assert (proc.returncode, proc.stderr) == (1, b"")
    assert json.loads(proc.stdout)["code"] != 0
    assert "braid ERROR CNI ADD failed" in log.read_text()
    (packed,) = wait_for_glob(tmp_path, "braid-*.log.gz")
    assert gzip.decompress(packed.read_bytes()) == content
