"""What a spare file holds is read by the rule the shim's DEL replay uses
(``braid_delegate::spares``): the golden cases of ``tests/fixtures/spares/``."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from braid.engine.record import RecordStore
from braid.engine.spares import SPARE_SIZE, SpareFiles, spare_record

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "spares" / "held.json"


def bytes_of(case: dict[str, Any]) -> bytes:
    return case["text"].encode().ljust(case.get("pad", 0), b" ")


def cases() -> list[dict[str, Any]]:
    golden = json.loads(GOLDEN.read_text())
    assert golden["spareSize"] == SPARE_SIZE
    return list(golden["cases"])


@pytest.mark.parametrize("case", cases(), ids=lambda case: case["name"])
def test_spare_record_reads_the_golden_cases(case: dict[str, Any]) -> None:
    data = bytes_of(case)
    if case["kind"] == "blank":
        assert spare_record(data) is None
        assert len(data) == case["value"]
    elif case["kind"] == "record":
        assert spare_record(data) == case["value"]
    else:
        with pytest.raises(ValueError, match=f"^{re.escape(case['value'])}$"):
            spare_record(data)


class Recorded(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_recovery_follows_no_link_and_reads_no_more_than_a_spare(tmp_path: Path) -> None:
    spares = tmp_path / "spares"
    spares.mkdir()
    outside = tmp_path / "outside.json"
    outside.write_bytes(b'{"containerId":"ctr9"}')
    (spares / "link.spare").symlink_to(outside)
    oversized = spares / "big.spare"
    oversized.write_bytes(b'{"containerId":"ctr8"}'.ljust(SPARE_SIZE + 1, b" "))
    logger = logging.getLogger("test.braid.spares")
    logger.propagate = False
    recorded = Recorded()
    logger.addHandler(recorded)
    try:
        SpareFiles(tmp_path, logger=logger).recover()
    finally:
        logger.removeHandler(recorded)
    assert (spares / "link.spare").is_symlink(), "a link is left alone"
    assert outside.exists()
    assert RecordStore(tmp_path).read("ctr9") is None
    assert not oversized.exists(), "larger than a spare: removed"
    assert any("larger than a spare file" in line for line in recorded.lines), recorded.lines
    assert RecordStore(tmp_path).read("ctr8") is None
    assert [p.name for p in spares.iterdir()] == ["link.spare"]
