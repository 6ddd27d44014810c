"""Consumer allocations: who holds how much of what, where, at which generation.

One row per consumer (``proj_consumers``: type, project, user, stream version, and the
consumer generation, ``None`` while it holds nothing) and one per consumer, provider and
class it holds (``proj_allocations``, carrying the generation, type and project so the
usual questions need no join). Every consumer event carries the whole new holding, so each
handler replaces the consumer's rows. A migration's context events (its instance claimed or
gave up a destination) advance the stream version but not the generation (guarantees §3: only a
write that names the consumer counts); they come only while the migration holds its source,
so the rows they find carry the generation, and the context events seen so far are the
version less the generation.
"""

from __future__ import annotations

from functools import singledispatch

from allocation_ledger.domain.consumer import Consumer, generation_of
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.values import Allocations
from allocation_ledger.projections import tables
from allocation_ledger.projections.projection import Projection
from allocation_ledger.projections.row_groups import GroupTable, Row, RowGroups

CONSUMERS = GroupTable(tables.consumers, "consumer_uuid")
ALLOCATIONS = GroupTable(tables.allocations, "consumer_uuid")


@singledispatch
def handle(event: object, rows: RowGroups) -> None:
    """Events that say nothing about consumers change nothing."""


@handle.register(Consumer.Created)
def _created(event: Consumer.Created, rows: RowGroups) -> None:
    rows.name_stream(event.originator_id, event.consumer_uuid)
    consumer = {
        "consumer_uuid": event.consumer_uuid,
        "consumer_type": event.consumer_type,
        "project_id": event.project_id,
        "user_id": event.user_id,
    }
    _hold(rows, consumer, event.originator_version, event.allocations)


@handle.register(Consumer.AllocationsSet)
def _allocations_set(event: Consumer.AllocationsSet, rows: RowGroups) -> None:
    _hold(rows, _consumer(rows, event), event.originator_version, event.allocations)


@handle.register(Consumer.AllocationsClaimed)
def _claimed(event: Consumer.AllocationsClaimed, rows: RowGroups) -> None:
    consumer = {**_consumer(rows, event), "consumer_type": event.consumer_type,
                "project_id": event.project_id, "user_id": event.user_id}
    _hold(rows, consumer, event.originator_version, event.allocations)


@handle.register(Migration.ContextEvent)
def _context(event: Migration.ContextEvent, rows: RowGroups) -> None:
    """The stream moves on; the holding and the generation stay."""
    consumer = _consumer(rows, event)
    uuid = consumer["consumer_uuid"]
    rows.put(CONSUMERS, uuid, [{**consumer, "version": event.originator_version}])


@handle.register(Consumer.Event)
def _other(event: Consumer.Event, rows: RowGroups) -> None:
    consumer = _consumer(rows, event)
    held: Allocations = {}
    for r in rows.rows(ALLOCATIONS, consumer["consumer_uuid"]):
        held.setdefault(r["provider_uuid"], {})[r["resource_class"]] = r["amount"]
    _hold(rows, consumer, event.originator_version, held)


def _consumer(rows: RowGroups, event: Consumer.Event) -> Row:
    (consumer,) = rows.rows(CONSUMERS, rows.name(event.originator_id))
    return consumer


def _hold(rows: RowGroups, consumer: Row, version: int, allocations: Allocations) -> None:
    """Give the consumer this holding at this stream version."""
    uuid = consumer["consumer_uuid"]
    held = [(rp, rc, n) for rp, by_rc in sorted(allocations.items())
            for rc, n in sorted(by_rc.items())]
    previous = consumer.get("generation")
    context_events = consumer["version"] - previous if previous is not None else 0
    generation = generation_of(version - context_events, holds=bool(held))
    rows.put(CONSUMERS, uuid, [{**consumer, "generation": generation, "version": version}])
    rows.put(ALLOCATIONS, uuid, [{
        "consumer_uuid": uuid,
        "provider_uuid": rp,
        "resource_class": rc,
        "amount": amount,
        "generation": generation,
        "consumer_type": consumer["consumer_type"],
        "project_id": consumer["project_id"],
        "user_id": consumer["user_id"],
    } for rp, rc, amount in held])


ALLOCATIONS_PROJECTION = Projection("allocations", (CONSUMERS, ALLOCATIONS), handle)
