"""Claims, multi-consumer writes and releases: decisions over a :class:`Workspace`.

A write or release naming an instance in the middle of a move is also a step of that move;
what it does to the move is :mod:`.moves`' to say (its destination claim, the settling of an
evacuation, the end of a move whose instance is deleted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from allocation_ledger.domain import moves
from allocation_ledger.domain.consumer import INSTANCE, MIGRATION, Consumer, check_generation
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.holdings import holding
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.reallocation import Holding, Target, reallocate
from allocation_ledger.domain.values import Allocations, Devices, RequestMeta
from allocation_ledger.domain.workspace import Workspace


@dataclass(frozen=True)
class ConsumerWrite:
    """One consumer's part of a write: its whole new allocation (already validated)."""

    consumer_uuid: str
    allocations: Allocations
    expected_generation: int | None
    project_id: str
    user_id: str
    consumer_type: str = INSTANCE
    devices: Devices = field(default_factory=dict)


def write(ws: Workspace, writes: Sequence[ConsumerWrite], request: RequestMeta) -> None:
    """Replace the allocations of every consumer in ``writes``, all or nothing.

    An empty allocation releases that consumer. A claim by an instance that is mid-move
    (after a swap) is its destination claim, and the migration's context records it; an
    empty one removes the destination and the move stays open. A write of an instance
    mid-evacuation may decide the evacuation (see :func:`.moves.destination_written`).
    """
    seen: set[str] = set()
    before: dict[str, Holding] = {}
    for w in writes:
        if w.consumer_uuid in seen:
            raise InvalidRequest(
                f"consumer {w.consumer_uuid} appears twice in one write",
                consumer_uuid=w.consumer_uuid,
            )
        seen.add(w.consumer_uuid)
        consumer = ws.consumer(w.consumer_uuid)
        # the generation first, as Placement checks it before anything else: a stale or
        # null one for a migration consumer is a conflict, as for any consumer
        check_generation(w.consumer_uuid, consumer, w.expected_generation)
        if isinstance(consumer, Migration) or w.consumer_type == MIGRATION:
            raise InvalidRequest(
                f"consumer {w.consumer_uuid}: migration consumers change only through the "
                "move commands (swap, confirm, revert, evacuate)",
                consumer_uuid=w.consumer_uuid,
            )
        if not w.allocations and (consumer is None or not consumer.allocations):
            raise InvalidRequest(
                f"consumer {w.consumer_uuid} holds nothing: an empty allocation would change "
                "nothing", consumer_uuid=w.consumer_uuid,
            )
        _check_named_devices(ws, w)
        migration = moves.in_flight_migration(ws, consumer)
        if migration is not None:
            moves.check_destination(ws, migration, w.consumer_uuid, w.allocations)
        before[w.consumer_uuid] = holding(consumer)
    targets = [Target(w.consumer_uuid, w.allocations, w.devices) for w in writes]
    after = reallocate(ws.provider, before, targets, request)
    for w in writes:
        _record_write(ws, w, after[w.consumer_uuid], request)


def _check_named_devices(ws: Workspace, w: ConsumerWrite) -> None:
    """Named devices must belong to a device-backed class the write allocates."""
    for rp, by_rc in w.devices.items():
        for rc in by_rc:
            if rc not in w.allocations.get(rp, {}) or not ws.provider(rp).is_device_backed(rc):
                raise InvalidRequest(
                    f"consumer {w.consumer_uuid} names {rc} devices on provider {rp}, but the "
                    f"write allocates no device-backed {rc} there",
                    consumer_uuid=w.consumer_uuid, provider_uuid=rp, resource_class=rc,
                )


def _record_write(ws: Workspace, w: ConsumerWrite, new: Holding, request: RequestMeta) -> None:
    consumer = ws.consumer(w.consumer_uuid)
    if consumer is None:
        ws.add(Consumer.create(w.consumer_uuid, w.project_id, w.user_id, w.consumer_type,
                               new.allocations, new.devices, request))
        return
    migration = moves.in_flight_migration(ws, consumer)
    if not new.allocations:
        consumer.set_holding(Consumer.AllocationsReleased, {}, {}, request, forced=False)
    else:
        consumer.set_holding(Consumer.AllocationsClaimed, new.allocations, new.devices,
                             request, project_id=w.project_id, user_id=w.user_id,
                             consumer_type=w.consumer_type)
    if migration is not None:
        moves.destination_written(ws, migration, new, request)


def release(
    ws: Workspace,
    consumer_uuid: str,
    expected_generation: int | None,
    request: RequestMeta,
    *,
    forced: bool = False,
) -> bool:
    """Remove a consumer's allocations and devices; ``False``, with nothing written, when it
    holds nothing (Nova's ``delete_allocation_for_instance`` does the same).

    An instance mid-move gives up only its destination share: the migration keeps the
    source and stays open for a new destination claim or a revert (Nova cleaning up a host
    whose ``prep_resize`` failed). Deleting the instance ends the move: ``forced`` (which
    ignores the generation) releases the migration's allocations in the same append and
    aborts it, and so does any release of an instance mid-evacuation. Releasing a migration
    consumer aborts it (an operator cleaning up a leaked migration).
    """
    consumer = ws.consumer(consumer_uuid)
    if not forced:
        check_generation(consumer_uuid, consumer, expected_generation)
    if isinstance(consumer, Migration):
        return moves.abort(ws, consumer, request)
    migration = moves.in_flight_migration(ws, consumer)
    held = consumer if consumer is not None and consumer.allocations else None
    ends = migration if migration is not None and moves.ends_with_release(
        migration, forced=forced) else None
    parties = [c for c in (held, ends) if c is not None]
    if not parties:
        return False
    targets = [Target(c.uuid, {}, check_units=False) for c in parties]
    reallocate(ws.provider, {c.uuid: holding(c) for c in parties}, targets, request)
    if held is not None:
        held.set_holding(Consumer.AllocationsReleased, {}, {}, request, forced=forced)
    if migration is not None:
        moves.instance_released(migration, request, ended=ends is not None)
    return True
