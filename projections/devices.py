"""Device holders: every named device of every live provider, and who holds it now.

One row per provider, device-backed class and device (``proj_device_holders``), with the
consumer holding it or ``None`` when it is free. The old and new devices of migrations in
flight are rows of the migrations projection (``proj_migration_devices``); the view
``proj_device_assignments`` shows both, with a role of current, old or new.
"""

from __future__ import annotations

from functools import singledispatch

from allocation_ledger.domain.provider import Provider
from allocation_ledger.projections import tables
from allocation_ledger.projections.projection import Projection
from allocation_ledger.projections.row_groups import GroupTable, Row, RowGroups

HOLDERS = GroupTable(tables.device_holders, "provider_uuid")


@singledispatch
def handle(event: object, rows: RowGroups) -> None:
    """Events that say nothing about devices change nothing."""


@handle.register(Provider.Registered)
def _registered(event: Provider.Registered, rows: RowGroups) -> None:
    rows.name_stream(event.originator_id, event.provider_uuid)


@handle.register(Provider.Reregistered)
def _reregistered(event: Provider.Reregistered, rows: RowGroups) -> None:
    rows.put(HOLDERS, event.provider_uuid, [])


@handle.register(Provider.DevicesSet)
def _devices_set(event: Provider.DevicesSet, rows: RowGroups) -> None:
    uuid = rows.name(event.originator_id)
    rc = event.resource_class
    current = rows.rows(HOLDERS, uuid)
    held = {r["device_id"]: r["holder"] for r in current if r["resource_class"] == rc}
    others = [r for r in current if r["resource_class"] != rc]
    rows.put(HOLDERS, uuid, others + [
        _row(uuid, rc, device, held.get(device)) for device in sorted(event.device_ids)
    ])


@handle.register(Provider.AllocationsChanged)
def _allocations_changed(event: Provider.AllocationsChanged, rows: RowGroups) -> None:
    if not event.holds:
        return
    uuid = rows.name(event.originator_id)
    by_device = {(r["resource_class"], r["device_id"]): r for r in rows.rows(HOLDERS, uuid)}
    for rc, changes in event.holds.items():
        for device, holder in changes.items():
            by_device[(rc, device)] = _row(uuid, rc, device, holder)
    rows.put(HOLDERS, uuid, by_device.values())


@handle.register(Provider.Deleted)
def _deleted(event: Provider.Deleted, rows: RowGroups) -> None:
    rows.put(HOLDERS, rows.name(event.originator_id), [])


def _row(provider_uuid: str, resource_class: str, device_id: str, holder: str | None) -> Row:
    return {"provider_uuid": provider_uuid, "resource_class": resource_class,
            "device_id": device_id, "holder": holder}


DEVICES = Projection("devices", (HOLDERS,), handle)
