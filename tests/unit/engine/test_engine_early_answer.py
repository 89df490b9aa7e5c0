"""`Engine.run`'s early answer (the daemon's): a successful ADD's result is handed over before the
attachment record's final write, which still happens before `Engine.run` returns; `braid-thin`
(no `answer`) writes first. Over fake plugins, in this process's own network namespace with
interface names nothing here uses (the fake plugins make no interface)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid.engine import Engine, run_cni

NETNS = "/proc/self/ns/net"


def record_of(dirs: Any, container_id: str) -> dict[str, Any] | None:
    path: Path = dirs.cni_dir / "records" / f"{container_id}.json"
    return json.loads(path.read_bytes()) if path.exists() else None


def add_env(dirs: Any, container_id: str) -> dict[str, str]:
    env: dict[str, str] = dirs.env("ADD", container_id, CNI_NETNS=NETNS, CNI_IFNAME="brdea0")
    return env


def test_the_answer_comes_before_the_final_record_write(dirs: Any) -> None:
    seen: list[tuple[bytes, dict[str, Any] | None]] = []

    def answer(result: bytes) -> None:
        seen.append((result, record_of(dirs, "early1")))

    out, code = Engine().run(add_env(dirs, "early1"), dirs.stdin(), answer=answer)

    assert code == 0
    assert len(seen) == 1, "answered once"
    early, record_then = seen[0]
    assert early == out, "the early answer is the result the engine returns"
    assert json.loads(early)["cniVersion"] == "1.0.0"
    assert record_then is not None, "the durable plan is on disk before the answer"
    assert "result" not in record_then["attachments"][0]
    assert "networkStatus" not in record_then
    final = record_of(dirs, "early1")
    assert final is not None
    assert "result" in final["attachments"][0], "the rewrite follows before the engine returns"
    assert final["networkStatus"]


def test_without_an_answer_the_record_is_complete_when_the_engine_returns(dirs: Any) -> None:
    out, code = run_cni(add_env(dirs, "thin1"), dirs.stdin())
    assert code == 0
    final = record_of(dirs, "thin1")
    assert final is not None
    assert final["attachments"][0]["result"]["ips"] == json.loads(out)["ips"]
    assert final["networkStatus"]


def test_a_failed_add_is_never_answered_early(dirs: Any) -> None:
    error = {"cniVersion": "1.0.0", "code": 7, "msg": "no address left"}
    dirs.behave("fakenet", "ADD", exit=1, stdout=json.dumps(error))
    seen: list[bytes] = []
    out, code = Engine().run(add_env(dirs, "fail1"), dirs.stdin(), answer=seen.append)
    assert code == 1
    assert json.loads(out)["code"] == 7
    assert seen == []
    assert record_of(dirs, "fail1") is None, "rolled back: no record left"


def test_a_final_write_that_fails_after_the_answer_keeps_the_answer(
    dirs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from braid.engine.record import RecordStore  # noqa: PLC0415

    real_write = RecordStore.write

    def write(self: Any, record: Any, *, durable: bool) -> None:
        if not durable:
            raise OSError(28, "No space left on device")
        real_write(self, record, durable=durable)

    monkeypatch.setattr(RecordStore, "write", write)
    seen: list[bytes] = []
    out, code = Engine().run(add_env(dirs, "full1"), dirs.stdin(), answer=seen.append)
    assert (code, seen) == (0, [out])
    plan = record_of(dirs, "full1")
    assert plan is not None, "the durable plan stays for DEL"
    assert "result" not in plan["attachments"][0]


def del_env(dirs: Any, container_id: str) -> dict[str, str]:
    env: dict[str, str] = dirs.env("DEL", container_id, CNI_NETNS=NETNS, CNI_IFNAME="brdea0")
    return env


def test_a_del_is_answered_once_its_record_is_removed(dirs: Any) -> None:
    # A crash between an answer and the removal would leave a record of a container the
    # runtime never DELs again: the record goes first.
    assert run_cni(add_env(dirs, "gone1"), dirs.stdin())[1] == 0
    seen: list[tuple[bytes, bool]] = []

    def answer(out: bytes) -> None:
        seen.append((out, record_of(dirs, "gone1") is not None))

    out, code = Engine().run(del_env(dirs, "gone1"), dirs.stdin(), answer=answer)
    assert (out, code) == (b"", 0)
    assert seen == [(b"", False)], "answered once, the record already gone"
    assert record_of(dirs, "gone1") is None


def test_a_failed_del_is_never_answered_early(dirs: Any) -> None:
    assert run_cni(add_env(dirs, "keep1"), dirs.stdin())[1] == 0
    dirs.behave("fakenet", "DEL", exit=1, stdout=json.dumps({"code": 11, "msg": "busy"}))
    seen: list[bytes] = []
    _, code = Engine().run(del_env(dirs, "keep1"), dirs.stdin(), answer=seen.append)
    assert code == 1
    assert seen == []
    assert record_of(dirs, "keep1") is not None, "kept for the retried DEL"


def test_a_del_of_a_corrupt_record_is_never_answered_early(dirs: Any) -> None:
    records = dirs.cni_dir / "records"
    records.mkdir(parents=True, exist_ok=True)
    (records / "torn1.json").write_bytes(b'{"containerId": "torn1", "attachm')
    seen: list[bytes] = []
    out, code = Engine().run(del_env(dirs, "torn1"), dirs.stdin(), answer=seen.append)
    assert code == 1, "the corrupt record is reported"
    assert "corrupt" in json.loads(out)["msg"]
    assert seen == []


def test_with_spares_the_plan_is_a_spare_and_a_lost_rename_is_put_back(dirs: Any) -> None:
    """The daemon's engine (spare record files): the plan of an ADD is written over a spare;
    a plan left in a spare (a lost rename) is put back by the first request under that
    cniDir before it takes any lock, even a DEL of that very container (same lock)."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    from braid.engine.spares import SPARE_SIZE, SparePools  # noqa: PLC0415

    pools = SparePools(keep=2)
    try:
        assert Engine(spares=pools).run(add_env(dirs, "sp1"), dirs.stdin())[1] == 0
        pool = pools.get(str(dirs.cni_dir))
        assert pool.taken + pool.missed == 1
    finally:
        pools.close()
    full = (dirs.cni_dir / "records" / "sp1.json").read_bytes()
    (dirs.cni_dir / "records" / "sp1.json").unlink()
    (dirs.cni_dir / "spares" / "lost.spare").write_bytes(full.ljust(SPARE_SIZE, b" "))

    restarted = SparePools(keep=2)
    try:
        with ThreadPoolExecutor(1) as pool_thread:
            engine = Engine(spares=restarted)
            done = pool_thread.submit(engine.run, del_env(dirs, "sp1"), dirs.stdin())
            out, code = done.result(timeout=20)
        assert (out, code) == (b"", 0)
        assert not (dirs.cni_dir / "spares" / "lost.spare").exists()
        assert record_of(dirs, "sp1") is None, "put back, then torn down and removed"
        deleted = [c["env"]["CNI_CONTAINERID"] for c in dirs.calls("DEL")]
        assert deleted == ["sp1"], "the DEL tore down from the recovered plan"
    finally:
        restarted.close()


def test_a_plan_that_cannot_be_written_fails_the_add_before_any_plugin_reads(dirs: Any) -> None:
    """The first plugin may start while the plan is written, but it gets no byte of its
    configuration until the plan is on disk: when the write fails, it is killed unread, the
    rollback runs nothing, and the ADD fails with code 5 (docs/adr/0002)."""
    dirs.cni_dir.mkdir(parents=True, exist_ok=True)
    (dirs.cni_dir / "records").write_text("a file where the records directory should be")
    out, code = run_cni(add_env(dirs, "nodisk1"), dirs.stdin())
    assert code == 1
    error = json.loads(out)
    assert error["code"] == 5, error
    assert "nodisk1" in error["msg"]
    assert dirs.calls("ADD") == [], "no plugin read its configuration"
    assert dirs.calls("DEL") == []
