"""Read models are bound to the history they were built from: restored from an older copy
of the ledger, the ledger no longer has the chain hash the read models recorded at their
position, and resume, follow and status refuse, saying why and to rebuild."""

from __future__ import annotations

import threading

import pytest

from allocation_ledger import open_ledger
from projections.readmodels import ReadModels
from projections.runner import ReadModelsDiverged
from tests.audit.tampering import EventsTable
from tests.builders import a_host, an_instance


def test_read_models_of_a_ledger_restored_from_an_older_copy_refuse_to_resume(
        durable_url: str) -> None:
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=64, memory_mb=None)
        an_instance(ledger, {host: {"VCPU": 2}})
        table = EventsTable(durable_url)
        backup = table.rows()  # the older copy
        for _ in range(3):
            an_instance(ledger, {host: {"VCPU": 2}})
        with ReadModels.of(ledger) as read:
            read.resume()
            followed = read.positions()["host_usage"]
        table.replace(backup)  # restored
        for _ in range(6):  # and written to again, past where the read models were
            an_instance(ledger, {host: {"VCPU": 1}})
        assert (ledger.store.recorder.max_notification_id() or 0) >= followed
        with ReadModels.of(ledger) as read:
            with pytest.raises(ReadModelsDiverged) as refused:
                read.resume()
            message = str(refused.value)
            assert "rebuild" in message and f"position {followed}" in message
            with pytest.raises(ReadModelsDiverged):
                read.follow(threading.Event())
            with pytest.raises(ReadModelsDiverged):
                read.positions()  # what status prints
            report = read.rebuild()
            assert report.positions["host_usage"] == ledger.store.recorder.max_notification_id()
            read.resume()  # bound to this history now
