"""A ledger stored before issue 17 (``tests/data/legacy_ledger.jsonl``, written by the code
of commit 773432f) still replays and audits clean, on every store kind, with no upcaster:
its ``Migration.DestinationClaimed`` events are context events under the new rule, so a
migration waiting with a destination now reads generation 1 (it read 2 when stored) and a
caller that read it right after the swap can confirm or revert it. The read models rebuilt
from it agree with the replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from projections.readmodels import ReadModels
from tests.data.write_legacy_ledger import BIG, HOSTS, MIGRATIONS, PMEM, SMALL, VMS
from tests.invariants import assert_invariants
from tests.projections.expected import folded, stored

LEDGER = Path(__file__).parent.parent / "data" / "legacy_ledger.jsonl"


@pytest.fixture
def legacy(url: str) -> Iterator[Ledger]:
    """The stored legacy ledger, loaded as is into a fresh store."""
    rows = [json.loads(line) for line in LEDGER.read_text().splitlines()]
    with open_ledger(url) as ledger:
        ledger.store.recorder.insert_events([
            StoredEvent(UUID(r["stream"]), r["version"], r["topic"],
                        json.dumps(r["state"], separators=(",", ":")).encode())
            for r in rows])
        yield ledger


def test_it_audits_clean_and_reads_the_new_numbers(legacy: Ledger) -> None:
    report = audit(legacy.store, stale_after=None)
    assert (report.findings, report.events) == ([], 44)
    assert_invariants(legacy)
    same_host, live, evacuation = MIGRATIONS[2], MIGRATIONS[3], MIGRATIONS[4]
    assert [legacy.migration(m).status for m in MIGRATIONS] == [
        "confirmed", "reverted", "in-progress", "in-progress", "in-progress"]
    assert legacy.migration(same_host).generation == 1  # 2 under the old rule
    assert legacy.migration(same_host).new_allocations == {HOSTS[0]: {**BIG, PMEM: 2}}
    assert legacy.migration(live).generation == 1
    assert legacy.migration(evacuation).generation is None
    assert [legacy.consumer(vm).generation for vm in VMS] == [3, 4, 3, 2, 2]


def test_its_moves_in_flight_resolve_with_the_new_numbers(legacy: Ledger) -> None:
    same_host, live, evacuation = MIGRATIONS[2], MIGRATIONS[3], MIGRATIONS[4]
    assert legacy.confirm(same_host, 1).status == "confirmed"
    assert legacy.revert(live, 1, 2).status == "reverted"
    legacy.claim(VMS[4], {HOSTS[2]: SMALL}, 2, project_id="p", user_id="u")  # rollback
    assert legacy.migration(evacuation).status == "reverted"
    assert [legacy.consumer(vm).allocations for vm in VMS[2:]] == [
        {HOSTS[0]: {**BIG, PMEM: 2}}, {HOSTS[1]: SMALL}, {HOSTS[2]: SMALL}]
    assert_invariants(legacy)
    report = audit(legacy.store, stale_after=None)
    assert report.findings == []


def test_its_read_models_rebuilt_agree_with_the_replay(legacy: Ledger, url: str,
                                                       tmp_path: Path) -> None:
    elsewhere = f"sqlite:///{tmp_path / 'read.db'}" if url.startswith("memory") else None
    models = ReadModels.of(legacy, url=elsewhere)
    try:
        models.rebuild()
        assert stored(models.engine) == folded(legacy)
        report = audit(legacy.store, stale_after=None, projections=elsewhere or True)
        assert report.findings == []
    finally:
        models.close()
