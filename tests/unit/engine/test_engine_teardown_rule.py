"""The teardown of a whole record follows one rule, the shim's (``braid_delegate::teardown``):
every entry, whatever its state, the last in plan order first; a failure names its attachment
and keeps the delegate's error whole, as the shim's replay reports it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from braid.cni import NetworkList, Runtime
from braid.cni.request import RuntimeRequest
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentEntry, AttachmentRecord
from braid.engine.teardown import tear_down
from braid.errors import PLUGIN_FAILURE, CniError

CONF = '{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"fakenet"}]}'


class DeleteRecorder:
    """The runtime's ``delete_lists`` seam: records the interfaces in the order given, and
    fails those named in ``failing``."""

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.order: list[str] = []

    def delete_lists(
        self, items: Sequence[tuple[NetworkList, RuntimeRequest, bytes | None]]
    ) -> list[CniError | None]:
        self.order.extend(request.ifname for _, request, _ in items)
        return [
            CniError(PLUGIN_FAILURE, "fakenet failed", "no lease")
            if request.ifname in self.failing
            else None
            for _, request, _ in items
        ]


def entry(position: int, state: Any) -> AttachmentEntry:
    return AttachmentEntry(
        status_name=f"default/n{position}",
        network_name=f"n{position}",
        ifname=f"net{position}",
        config=CONF,
        position=position,
        state=state,
    )


def test_every_entry_goes_whatever_its_state_the_last_in_plan_order_first() -> None:
    entries = [entry(0, "added"), entry(2, "planned"), entry(1, "failed"), entry(3, "deleted")]
    record = AttachmentRecord(
        container_id="c1", netns="", kind=RECORD_KIND, version=RECORD_VERSION, attachments=entries
    )
    runtime = DeleteRecorder(failing={"net2"})
    errors = tear_down(cast(Runtime, runtime), record, entries, netns="")
    assert runtime.order == ["net3", "net2", "net1", "net0"]
    assert [e.state for e in entries] == ["deleted", "failed", "deleted", "deleted"]
    assert len(errors) == 1
    failed = errors[0]
    assert (failed.code, failed.msg) == (PLUGIN_FAILURE, "default/n2: DEL failed")
    assert failed.details == f"fakenet failed: no lease (code {PLUGIN_FAILURE})"
