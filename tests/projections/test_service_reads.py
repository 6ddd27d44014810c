"""The service API's queries over the projections read the caller's own writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.domain.errors import InvalidRequest
from tests.builders import a_host, an_instance, new_id
from tests.stores import store_url


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_reads_answer_from_the_projections_after_each_write(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, open_ledger(url, read_side=True) as ledger:
        host = a_host(ledger, vcpu=8, memory_mb=4096)
        busy = a_host(ledger, vcpu=8, memory_mb=4096)
        an_instance(ledger, {busy: {"VCPU": 6, "MEMORY_MB": 1024}})
        free = {t.root_uuid: t.free for t in ledger.reads.free_capacity("VCPU", 4)}
        assert free == {host: 8}
        vm = an_instance(ledger, {host: {"VCPU": 5}})
        assert {t.root_uuid for t in ledger.reads.free_capacity("VCPU", 4)} == set()
        usage = {(u.provider_uuid, u.resource_class): u.used for u in ledger.reads.host_usage()}
        assert usage[(host, "VCPU")] == 5 and usage[(busy, "MEMORY_MB")] == 1024
        migration = new_id()
        ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
        moving = ledger.reads.migrations_in_flight()
        assert [m.migration_uuid for m in moving] == [migration]
        assert ledger.reads.migrations_in_flight(older_than_seconds=3600) == []
        assert ledger.reads.devices_of_host(host) == []


def test_a_ledger_without_its_read_side_says_how_to_get_it() -> None:
    with open_ledger("memory://") as ledger, pytest.raises(InvalidRequest, match="read_side"):
        ledger.reads.host_usage()


def test_a_read_catches_up_when_another_runner_emptied_the_read_models(tmp_path: Path) -> None:
    """Whether to catch up is decided by the positions the read models hold, not by what
    this process caught up to last: reset behind its back (a rebuild begun elsewhere),
    the next read fills them again rather than answering from empty tables."""
    from allocation_ledger.projections.readmodels import ReadModels

    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}", read_side=True) as ledger:
        host = a_host(ledger, vcpu=8, memory_mb=None)
        an_instance(ledger, {host: {"VCPU": 3}})
        models = ledger.read_side.models  # type: ignore[attr-defined]
        assert not models.caught_up()
        assert [u.used for u in ledger.reads.host_usage(host)] == [3]
        assert models.caught_up()
        with ReadModels.of(ledger) as elsewhere:
            elsewhere.reset()
        assert not models.caught_up()
        assert [u.used for u in ledger.reads.host_usage(host)] == [3]
        an_instance(ledger, {host: {"VCPU": 2}})
        assert not models.caught_up()
        assert [u.used for u in ledger.reads.host_usage(host)] == [5]
