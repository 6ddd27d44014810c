"""§5.5 for the read models: a row changed by hand is reported; a projection that merely
lags is not (it is compared at its own position)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import update

from allocation_ledger import Ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.cli import main
from tests.builders import PROJECT, USER, a_host, new_id

readmodels = pytest.importorskip("allocation_ledger.projections.readmodels")
tables = pytest.importorskip("allocation_ledger.projections.tables")


def _built(ledger: Ledger) -> tuple[str, str]:
    """A host with an instance on it, and the read models caught up."""
    host = a_host(ledger, vcpu=8, memory_mb=None)
    vm = new_id()
    ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER)
    with readmodels.ReadModels.of(ledger) as read:
        read.resume()
    return host, vm


def test_read_models_that_agree_with_the_replay_give_no_finding(
    durable_ledger: Ledger,
) -> None:
    host, _ = _built(durable_ledger)
    durable_ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT,
                         user_id=USER)  # the read models now lag behind: not drift
    report = audit(durable_ledger.store, projections=True)
    assert (report.findings, report.notes) == ([], [])


def test_a_row_changed_by_hand_is_reported(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    host, vm = _built(durable_ledger)
    with readmodels.ReadModels.of(durable_ledger) as read, read.engine.begin() as conn:
        conn.execute(update(tables.host_usage).where(tables.host_usage.c.provider_uuid == host)
                     .values(used=5))
        conn.execute(update(tables.allocations).where(tables.allocations.c.consumer_uuid == vm)
                     .values(amount=3))
    position = durable_ledger.store.recorder.max_notification_id()

    report = audit(durable_ledger.store, projections=True)
    assert [(x.kind, x.position, x.ids["projection"]) for x in report.findings] == [
        (f.PROJECTION_DRIFT, position, "allocations"),
        (f.PROJECTION_DRIFT, position, "host_usage")]
    allocations, usage = report.findings
    assert allocations.message == (
        f"read model allocations has the allocations of consumer {vm} = "
        f"{{'{host}': {{'VCPU': 3}}}}, the ledger has {{'{host}': {{'VCPU': 2}}}}")
    assert usage.message == (
        f"read model host_usage has usage of VCPU on provider {host} = 5, the ledger has 2")

    assert main(["audit", "--url", durable_url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == 2
    assert main(["audit", "--url", durable_url, "--projections", "off"]) == 0
