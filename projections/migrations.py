"""Migration contexts: every move, its status, and the devices of the moves in flight.

One row per migration (``proj_migrations``: instance, kind, status, source and destination
roots, old and new allocations and devices as JSON, started and finished times) and, while
the move is in flight, one row per device of its context (``proj_migration_devices``: role
``old`` for the source devices, ``new`` for the destination's, held by the instance; a
destination given up loses its ``new`` rows). A resolved move keeps its row with its final
status and loses its device rows.
"""

from __future__ import annotations

from functools import singledispatch

from allocation_ledger.domain.migration import IN_PROGRESS, Migration
from allocation_ledger.domain.values import Devices
from allocation_ledger.projections import tables
from allocation_ledger.projections.projection import Projection
from allocation_ledger.projections.row_groups import GroupTable, Row, RowGroups

MIGRATIONS = GroupTable(tables.migrations, "migration_uuid")
MOVING_DEVICES = GroupTable(tables.migration_devices, "migration_uuid")


@singledispatch
def handle(event: object, rows: RowGroups) -> None:
    """Events that say nothing about migrations change nothing."""


@handle.register(Migration.Started)
def _started(event: Migration.Started, rows: RowGroups) -> None:
    uuid = event.consumer_uuid
    rows.name_stream(event.originator_id, uuid)
    migration = {
        "migration_uuid": uuid,
        "instance_uuid": event.instance_uuid,
        "kind": event.kind,
        "status": IN_PROGRESS,
        "source_root": event.source_root,
        "destination_root": event.destination_root,
        "old_allocations": event.old_allocations,
        "old_devices": event.old_devices,
        "new_allocations": event.new_allocations,
        "new_devices": event.new_devices,
        "started_at": event.timestamp,
        "finished_at": None,
    }
    rows.put(MIGRATIONS, uuid, [migration])
    rows.put(MOVING_DEVICES, uuid, _devices(migration, "old", event.old_devices)
             + _devices(migration, "new", event.new_devices))


@handle.register(Migration.DestinationClaimed)
def _destination_claimed(event: Migration.DestinationClaimed, rows: RowGroups) -> None:
    uuid = rows.name(event.originator_id)
    (migration,) = rows.rows(MIGRATIONS, uuid)
    migration = {**migration, "destination_root": event.destination_root,
                 "new_allocations": event.new_allocations, "new_devices": event.new_devices}
    rows.put(MIGRATIONS, uuid, [migration])
    old = [r for r in rows.rows(MOVING_DEVICES, uuid) if r["role"] == "old"]
    rows.put(MOVING_DEVICES, uuid, old + _devices(migration, "new", event.new_devices))


@handle.register(Migration.DestinationRemoved)
def _destination_removed(event: Migration.DestinationRemoved, rows: RowGroups) -> None:
    uuid = rows.name(event.originator_id)
    (migration,) = rows.rows(MIGRATIONS, uuid)
    rows.put(MIGRATIONS, uuid, [{**migration, "destination_root": None,
                                 "new_allocations": {}, "new_devices": {}}])
    rows.put(MOVING_DEVICES, uuid, [r for r in rows.rows(MOVING_DEVICES, uuid)
                                    if r["role"] == "old"])


@handle.register(Migration.Resolved)
def _resolved(event: Migration.Resolved, rows: RowGroups) -> None:
    uuid = rows.name(event.originator_id)
    (migration,) = rows.rows(MIGRATIONS, uuid)
    rows.put(MIGRATIONS, uuid, [{**migration, "status": event.status,
                                 "finished_at": event.timestamp}])
    rows.put(MOVING_DEVICES, uuid, [])


def _devices(migration: Row, role: str, devices: Devices) -> list[Row]:
    return [
        {"migration_uuid": migration["migration_uuid"], "role": role, "provider_uuid": rp,
         "resource_class": rc, "device_id": device, "holder": migration["instance_uuid"]}
        for rp, by_rc in sorted(devices.items())
        for rc, ids in sorted(by_rc.items())
        for device in sorted(set(ids))
    ]


MIGRATIONS_PROJECTION = Projection("migrations", (MIGRATIONS, MOVING_DEVICES), handle)
