"""Live migrations (Nova's ``test_live_migrate`` and its rollback), and the operator's view
of moves in flight (``migrations_in_flight``), under a frozen clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from allocation_ledger import Ledger
from tests.builders import new_id
from tests.service.moving import (
    FLAVOR1,
    Scene,
    flat_hosts,
    frozen_clock,
    moved_to_other_host,
    spawn,
)

LIVE = "live-migration"


def test_live_migration_success_confirms(ledger: Ledger) -> None:
    """post_live_migration: the source share held by the migration is dropped."""
    m = moved_to_other_host(ledger, LIVE, FLAVOR1, FLAVOR1)
    ledger.confirm(m.mig, 1)
    m.scene.expect({m.host2: FLAVOR1}, {m.vm: ({m.host2: FLAVOR1}, 3), m.mig: ({}, None)},
                   {m.mig: "confirmed"})


def test_live_migration_rollback_reverts(ledger: Ledger) -> None:
    """rollback_live_migration: the server is back on host1 alone."""
    m = moved_to_other_host(ledger, LIVE, FLAVOR1, FLAVOR1)
    ledger.revert(m.mig, 1, 3)
    m.scene.expect({m.host1: FLAVOR1}, {m.vm: ({m.host1: FLAVOR1}, 4), m.mig: ({}, None)},
                   {m.mig: "reverted"})


def test_live_migration_precheck_failure_rolls_back_before_any_claim(ledger: Ledger) -> None:
    """check_can_live_migrate_destination failed: nothing was claimed, the revert takes
    ``None`` for the server and restores the start."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.swap(vm, mig, 1, kind=LIVE)
    scene.expect({host1: FLAVOR1}, {vm: ({}, None), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})
    ledger.revert(mig, 1, None)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "reverted"})


def test_live_migration_with_destination_in_the_swap(ledger: Ledger) -> None:
    """Swap and destination claim in one write: the server never reads as empty and the
    migration's context names the destination from its first event."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})

    started = ledger.swap(vm, mig, 1, kind=LIVE, destination={host2: FLAVOR1})
    assert (started.destination_root, started.new_allocations) == (host2, {host2: FLAVOR1})
    scene.expect({host1: FLAVOR1, host2: FLAVOR1},
                 {vm: ({host2: FLAVOR1}, 2), mig: ({host1: FLAVOR1}, 1)}, {mig: "in-progress"})

    ledger.confirm(mig, 1)
    scene.expect({host2: FLAVOR1}, {vm: ({host2: FLAVOR1}, 2), mig: ({}, None)},
                 {mig: "confirmed"})


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_migrations_in_flight_lists_unresolved_moves_with_their_age(ledger: Ledger) -> None:
    """Oldest first, filtered by age; confirmed and reverted moves drop out."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm1, vm2, mig1, mig2 = new_id(), new_id(), new_id(), new_id()
    twice = {rc: 2 * n for rc, n in FLAVOR1.items()}
    with frozen_clock(ledger, T0) as clock:
        spawn(ledger, vm1, {host1: FLAVOR1})
        spawn(ledger, vm2, {host1: FLAVOR1})
        scene.expect({host1: twice}, {vm1: ({host1: FLAVOR1}, 1), vm2: ({host1: FLAVOR1}, 1)})
        assert ledger.migrations_in_flight() == []

        ledger.swap(vm1, mig1, 1, kind=LIVE)
        scene.expect({host1: twice}, {vm1: ({}, None), mig1: ({host1: FLAVOR1}, 1)},
                     {mig1: "in-progress"})
        clock.tick(timedelta(seconds=60))
        ledger.swap(vm2, mig2, 1, kind="resize", destination={host2: FLAVOR1})
        scene.expect({host1: twice, host2: FLAVOR1},
                     {vm2: ({host2: FLAVOR1}, 2), mig2: ({host1: FLAVOR1}, 1)},
                     {mig1: "in-progress", mig2: "in-progress"})
        clock.tick(timedelta(seconds=60))

        flying = ledger.migrations_in_flight()
        assert [(m.migration_uuid, m.kind) for m in flying] == [(mig1, LIVE), (mig2, "resize")]
        assert [m.started_at for m in flying] == [T0, T0 + timedelta(seconds=60)]
        now = datetime.now(UTC)
        assert [m.age_seconds(now) for m in flying] == [120.0, 60.0]
        assert [m.migration_uuid for m in ledger.migrations_in_flight(90)] == [mig1]
        assert ledger.migrations_in_flight(121) == []
        later = T0 + timedelta(hours=1)
        assert [m.migration_uuid for m in ledger.migrations_in_flight(3000, now=later)] == [
            mig1, mig2]

        ledger.confirm(mig2, 1)
        scene.expect({host1: FLAVOR1, host2: FLAVOR1},
                     {vm2: ({host2: FLAVOR1}, 2), mig2: ({}, None)},
                     {mig1: "in-progress", mig2: "confirmed"})
        assert [m.migration_uuid for m in ledger.migrations_in_flight()] == [mig1]
        assert ledger.migration(mig2).finished_at == T0 + timedelta(seconds=120)

        clock.tick(timedelta(seconds=30))
        ledger.revert(mig1, 1, None)
        scene.expect({host1: FLAVOR1, host2: FLAVOR1},
                     {vm1: ({host1: FLAVOR1}, 3), mig1: ({}, None),
                      vm2: ({host2: FLAVOR1}, 2), mig2: ({}, None)},
                     {mig1: "reverted", mig2: "confirmed"})
        assert ledger.migrations_in_flight() == []
        # A resolved move's age stops at its end.
        assert ledger.migration(mig1).age_seconds(later) == 150.0
