"""Consumer allocations: who holds how much of what, where, at which generation.

One row per consumer (``proj_consumers``: type, project, user, stream version, and the
consumer generation, ``None`` while it holds nothing) and one per consumer, provider and
class it holds (``proj_allocations``, carrying the generation, type and project so the
usual questions need no join). Every consumer event carries the whole new holding, so each
handler replaces the consumer's rows; events that change no holding (a migration recording
its destination) still advance the generation.
"""

from __future__ import annotations

from functools import singledispatch

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.values import Allocations
from projections import tables
from projections.projection import Projection
from projections.workset import GroupTable, Row, Workset

CONSUMERS = GroupTable(tables.consumers, "consumer_uuid")
ALLOCATIONS = GroupTable(tables.allocations, "consumer_uuid")


@singledispatch
def handle(event: object, rows: Workset) -> None:
    """Events that say nothing about consumers change nothing."""


@handle.register(Consumer.Created)
def _created(event: Consumer.Created, rows: Workset) -> None:
    rows.name_stream(event.originator_id, event.consumer_uuid)
    consumer = {
        "consumer_uuid": event.consumer_uuid,
        "consumer_type": event.consumer_type,
        "project_id": event.project_id,
        "user_id": event.user_id,
    }
    _hold(rows, consumer, event.originator_version, event.allocations)


@handle.register(Consumer.AllocationsSet)
def _allocations_set(event: Consumer.AllocationsSet, rows: Workset) -> None:
    _hold(rows, _consumer(rows, event), event.originator_version, event.allocations)


@handle.register(Consumer.AllocationsClaimed)
def _claimed(event: Consumer.AllocationsClaimed, rows: Workset) -> None:
    consumer = {**_consumer(rows, event), "consumer_type": event.consumer_type,
                "project_id": event.project_id, "user_id": event.user_id}
    _hold(rows, consumer, event.originator_version, event.allocations)


@handle.register(Consumer.Event)
def _other(event: Consumer.Event, rows: Workset) -> None:
    consumer = _consumer(rows, event)
    held: Allocations = {}
    for r in rows.rows(ALLOCATIONS, consumer["consumer_uuid"]):
        held.setdefault(r["provider_uuid"], {})[r["resource_class"]] = r["amount"]
    _hold(rows, consumer, event.originator_version, held)


def _consumer(rows: Workset, event: Consumer.Event) -> Row:
    (consumer,) = rows.rows(CONSUMERS, rows.name(event.originator_id))
    return consumer


def _hold(rows: Workset, consumer: Row, version: int, allocations: Allocations) -> None:
    """Give the consumer this holding at this stream version."""
    uuid = consumer["consumer_uuid"]
    held = [(rp, rc, n) for rp, by_rc in sorted(allocations.items())
            for rc, n in sorted(by_rc.items())]
    generation = version if held else None
    rows.put(CONSUMERS, uuid, [{**consumer, "generation": generation, "version": version}])
    rows.put(ALLOCATIONS, uuid, [{
        "consumer_uuid": uuid,
        "provider_uuid": rp,
        "resource_class": rc,
        "amount": amount,
        "generation": version,
        "consumer_type": consumer["consumer_type"],
        "project_id": consumer["project_id"],
        "user_id": consumer["user_id"],
    } for rp, rc, amount in held])


ALLOCATIONS_PROJECTION = Projection("allocations", (CONSUMERS, ALLOCATIONS), handle)
