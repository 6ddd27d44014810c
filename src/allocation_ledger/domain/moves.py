"""A move's whole life, over a :class:`Workspace`: it starts (swap, forced live migration,
evacuation), its instance claims or gives up a destination (a plain write of the instance:
:func:`check_destination`, :func:`destination_written`), and it ends (confirm, revert,
completion of an evacuation, or abort when the instance is deleted or the migration
released: :func:`ends_with_release`, :func:`instance_released`, :func:`abort`).

Each command function checks every generation it depends on, decides, and changes the
aggregates it names; the caller saves them in one atomic append, so a rejected or
conflicting move leaves the ledger exactly as it was.
"""

from __future__ import annotations

from allocation_ledger.domain.consumer import Consumer, check_generation
from allocation_ledger.domain.errors import (
    ConsumerHoldsNothing,
    ConsumerNotFound,
    InvalidRequest,
    MigrationInProgress,
    NestedAllocationMove,
)
from allocation_ledger.domain.holdings import holding
from allocation_ledger.domain.migration import (
    ABORTED,
    COLD_MIGRATION,
    COMPLETED,
    CONFIRMED,
    EVACUATION,
    LIVE_MIGRATION,
    RESIZE,
    REVERTED,
    Migration,
)
from allocation_ledger.domain.reallocation import Holding, Target, check_unit_rules, reallocate
from allocation_ledger.domain.values import (
    Allocations,
    RequestMeta,
    merge_allocations,
    provider_uuids,
)
from allocation_ledger.domain.workspace import Workspace

SWAP_KINDS = (RESIZE, COLD_MIGRATION, LIVE_MIGRATION)


def in_flight_migration(ws: Workspace, consumer: Consumer | None) -> Migration | None:
    """The move ``consumer`` (an instance) is in the middle of, if any."""
    if consumer is None or consumer.migration_uuid is None:
        return None
    migration = ws.migration(consumer.migration_uuid)
    return migration if migration.in_flight else None


def root_of(ws: Workspace, allocations: Allocations) -> str:
    """The root provider (host) of an allocation: that of its first provider."""
    return ws.provider(min(allocations)).root_uuid


# -- the destination step: a plain write of an instance mid-move ---------------------------

def check_destination(ws: Workspace, migration: Migration, instance_uuid: str,
                      allocations: Allocations) -> None:
    """Before a write of an instance mid-move: a live migration's destination must be on
    another host than its source."""
    if migration.kind == LIVE_MIGRATION and any(
        ws.provider(rp).root_uuid == migration.source_root for rp in allocations
    ):
        raise InvalidRequest(
            f"a live migration must leave host {migration.source_root}: instance "
            f"{instance_uuid} cannot claim its destination there",
            consumer_uuid=instance_uuid, provider_uuid=migration.source_root,
        )


def destination_written(ws: Workspace, migration: Migration, new: Holding,
                        request: RequestMeta) -> None:
    """The instance of an in-flight move was written to hold ``new``: the move's destination
    step. For a resize or migration, a write that holds something is the destination claim
    (recorded in the move's context) and an empty one removes the destination (a failed
    ``prep_resize``: the move stays open for another host or a revert). For an evacuation,
    the write decides it, as Nova's own clean-ups do: nothing left on the destination host is
    its rollback (reverted), nothing left on the source host its completion, nothing left at
    all the instance's deletion (aborted); shares on both hosts leave it in flight."""
    if migration.kind != EVACUATION:
        if new.allocations:
            migration.record_destination(root_of(ws, new.allocations), new.allocations,
                                         new.devices, request)
        else:
            migration.remove_destination(request)
        return
    roots = {ws.provider(rp).root_uuid for rp in new.allocations}
    if not new.allocations:
        migration.resolve(Migration.Aborted, ABORTED, request)
    elif migration.destination_root not in roots:
        migration.resolve(Migration.Reverted, REVERTED, request)
    elif migration.source_root not in roots:
        migration.resolve(Migration.Completed, COMPLETED, request)


# -- a release of the instance or of the migration -----------------------------------------

def ends_with_release(migration: Migration, *, forced: bool) -> bool:
    """True when releasing the move's instance ends the move: the instance is deleted
    (``forced``), or it is evacuating (its only allocation is the move's)."""
    return forced or migration.kind == EVACUATION


def instance_released(migration: Migration, request: RequestMeta, *, ended: bool) -> None:
    """The move's instance was released: the move is aborted (``ended``, its source released
    in the same write), or it only loses its destination and stays open."""
    if ended:
        migration.resolve(Migration.Aborted, ABORTED, request)
    else:
        migration.remove_destination(request)


def abort(ws: Workspace, migration: Migration, request: RequestMeta) -> bool:
    """Release a migration consumer's source allocation and abort the move (an operator
    cleaning up a leaked migration); ``False`` once it is resolved (it then holds
    nothing)."""
    if not migration.in_flight:
        return False
    if not migration.allocations:
        raise InvalidRequest(
            f"migration {migration.uuid} ({migration.kind}) holds nothing itself: revert or "
            "complete it instead", migration_uuid=migration.uuid,
        )
    reallocate(ws.provider, {migration.uuid: holding(migration)},
               [Target(migration.uuid, {}, check_units=False)], request)
    migration.resolve(Migration.Aborted, ABORTED, request)
    return True


# -- the move commands ----------------------------------------------------------------------


def _movable_instance(
    ws: Workspace, instance_uuid: str, expected_generation: int | None, migration_uuid: str
) -> Consumer:
    instance = ws.consumer(instance_uuid)
    if isinstance(instance, Migration):
        raise InvalidRequest(
            f"consumer {instance_uuid} is a migration record, not an instance",
            consumer_uuid=instance_uuid,
        )
    check_generation(instance_uuid, instance, expected_generation)
    if instance is None or not instance.allocations:
        raise ConsumerHoldsNothing(instance_uuid)
    moving = in_flight_migration(ws, instance)
    if moving is not None:
        raise MigrationInProgress(instance_uuid, moving.uuid)
    if migration_uuid == instance_uuid or ws.consumer(migration_uuid) is not None:
        raise InvalidRequest(
            f"migration {migration_uuid} already exists: each move needs a new UUID",
            migration_uuid=migration_uuid,
        )
    return instance


def _blind_copy(ws: Workspace, instance: Consumer, destination_root: str) -> Allocations:
    """The instance's single-provider allocation, copied to ``destination_root``."""
    sources = provider_uuids(instance.allocations)
    if len(sources) > 1:
        raise NestedAllocationMove(instance.uuid, sources)
    destination = ws.provider(destination_root)
    if destination.parent_uuid is not None:
        raise InvalidRequest(
            f"forced moves target a host (a root provider); {destination_root} is a child "
            f"of {destination.parent_uuid}", provider_uuid=destination_root,
        )
    return {destination_root: dict(instance.allocations[sources[0]])}


def evacuated_root(ws: Workspace, allocations: Allocations, destination: Allocations) -> str:
    """The host an evacuation leaves, among the roots of the instance's ``allocations``: the
    one whose resource classes the ``destination`` stands in for (an instance may also hold
    disk on a shared-storage root, which stays); then the one holding more classes; then
    the lowest UUID, so the choice is the same on every replay."""
    wanted = {rc for by_rc in destination.values() for rc in by_rc}
    classes: dict[str, set[str]] = {}
    for rp, by_rc in allocations.items():
        classes.setdefault(ws.provider(rp).root_uuid, set()).update(by_rc)
    return min(classes, key=lambda root: (-len(classes[root] & wanted),
                                          -len(classes[root]), root))


def check_other_host(ws: Workspace, source_root: str, destination: Allocations,
                     move: str) -> str:
    """The destination's root; :class:`InvalidRequest` if any of it is on the source host."""
    if any(ws.provider(rp).root_uuid == source_root for rp in destination):
        raise InvalidRequest(
            f"a {move} must leave host {source_root}: the destination is on it",
            provider_uuid=source_root,
        )
    return root_of(ws, destination)


def swap(
    ws: Workspace,
    instance_uuid: str,
    migration_uuid: str,
    kind: str,
    expected_generation: int | None,
    request: RequestMeta,
    destination: Allocations | None = None,
) -> None:
    """Start a move: hand the instance's whole allocation and devices to a new migration.

    With ``destination`` the instance also claims it in the same append (a combined swap
    and destination claim); without, it is left empty and claims with ``None`` next.
    """
    if kind not in SWAP_KINDS:
        raise InvalidRequest(f"kind must be one of {', '.join(SWAP_KINDS)}, got {kind!r}",
                             kind=kind)
    instance = _movable_instance(ws, instance_uuid, expected_generation, migration_uuid)
    source_root = root_of(ws, instance.allocations)
    if destination and kind == LIVE_MIGRATION:
        check_other_host(ws, source_root, destination, kind)
    targets = [
        Target(migration_uuid, instance.allocations, instance.devices, check_units=False),
        Target(instance_uuid, destination or {}),
    ]
    before = {instance_uuid: holding(instance)}
    after = reallocate(ws.provider, before, targets, request)
    new = after[instance_uuid]
    destination_root = root_of(ws, new.allocations) if new.allocations else None
    moved = after[migration_uuid]
    ws.add(Migration.start(migration_uuid, instance, kind, source_root,
                           (moved.allocations, moved.devices),
                           (destination_root, new.allocations, new.devices), request))
    instance.set_holding(Consumer.AllocationsHandedOver, new.allocations, new.devices, request,
                         migration_uuid=migration_uuid)


def force_live_migrate(
    ws: Workspace,
    instance_uuid: str,
    migration_uuid: str,
    destination_root: str,
    expected_generation: int | None,
    request: RequestMeta,
) -> None:
    """A forced live migration: swap plus a blind copy of the allocation to a named host.

    Refused, with nothing written, when the allocation spans more than one provider.
    """
    instance = _movable_instance(ws, instance_uuid, expected_generation, migration_uuid)
    copy = _blind_copy(ws, instance, destination_root)
    swap(ws, instance_uuid, migration_uuid, LIVE_MIGRATION, expected_generation, request,
         destination=copy)


def confirm(
    ws: Workspace, migration_uuid: str, expected_generation: int | None, request: RequestMeta
) -> None:
    """Finish a move: release the migration's source allocation and old devices."""
    migration = ws.migration(migration_uuid)
    migration.check_can("confirm", SWAP_KINDS)
    check_generation(migration_uuid, migration, expected_generation)
    if migration.destination_root is None:
        raise InvalidRequest(
            f"migration {migration_uuid} has no destination claimed yet: revert it instead",
            migration_uuid=migration_uuid,
        )
    targets = [Target(migration_uuid, {}, check_units=False)]
    reallocate(ws.provider, {migration_uuid: holding(migration)}, targets, request)
    migration.resolve(Migration.Confirmed, CONFIRMED, request)


def revert(
    ws: Workspace,
    migration_uuid: str,
    expected_generation: int | None,
    instance_generation: int | None,
    request: RequestMeta,
) -> None:
    """Undo a move: the instance gives up its destination and gets its source back.

    Also the rollback of a failed live migration, of a move that found no destination
    (``instance_generation=None``: the instance holds nothing) and of an evacuation that
    did not happen (the destination share is removed).
    """
    migration = ws.migration(migration_uuid)
    migration.check_can("revert")
    check_generation(migration_uuid, migration, expected_generation)
    instance = ws.consumer(migration.instance_uuid)
    check_generation(migration.instance_uuid, instance, instance_generation)
    if instance is None:  # cannot happen: a swap writes the instance's stream
        raise ConsumerNotFound(migration.instance_uuid)
    targets = [Target(instance.uuid, migration.old_allocations, migration.old_devices,
                      check_units=False)]
    before = {instance.uuid: holding(instance)}
    if migration.kind != EVACUATION:
        targets.append(Target(migration_uuid, {}, check_units=False))
        before[migration_uuid] = holding(migration)
    after = reallocate(ws.provider, before, targets, request)
    back = after[instance.uuid]
    instance.set_holding(Consumer.AllocationsReturned, back.allocations, back.devices,
                         request, migration_uuid=migration_uuid)
    migration.resolve(Migration.Reverted, REVERTED, request)


def evacuate(
    ws: Workspace,
    instance_uuid: str,
    migration_uuid: str,
    expected_generation: int | None,
    request: RequestMeta,
    destination: Allocations | None = None,
    destination_root: str | None = None,
) -> None:
    """Evacuate an instance from a failed host: it holds source and destination at once.

    Give ``destination`` (a scheduled evacuation) or ``destination_root`` (forced: a blind
    copy, refused for allocations spanning several providers). The source share stays until
    :func:`complete_evacuation`.
    """
    instance = _movable_instance(ws, instance_uuid, expected_generation, migration_uuid)
    if (destination is None) == (destination_root is None):
        raise InvalidRequest("give exactly one of destination or destination_root")
    if destination is None:
        destination = _blind_copy(ws, instance, destination_root or "")
    source_root = evacuated_root(ws, instance.allocations, destination)
    dest_root = check_other_host(ws, source_root, destination, EVACUATION)
    check_unit_rules(ws.provider, instance_uuid, destination)
    both = merge_allocations(instance.allocations, destination)
    target = Target(instance_uuid, both, instance.devices, check_units=False)
    after = reallocate(ws.provider, {instance_uuid: holding(instance)}, [target], request)
    new = after[instance_uuid]
    new_devices = {rp: by_rc for rp, by_rc in new.devices.items() if rp in destination}
    ws.add(Migration.start(migration_uuid, instance, EVACUATION, source_root, ({}, {}),
                           (dest_root, destination, new_devices), request))
    instance.set_holding(Consumer.EvacuationStarted, new.allocations, new.devices, request,
                         migration_uuid=migration_uuid)


def complete_evacuation(
    ws: Workspace, migration_uuid: str, instance_generation: int | None, request: RequestMeta
) -> None:
    """The source host was cleaned up: remove the evacuated instance's source share, its
    allocations on the evacuated host's tree only; what it holds on any other provider
    (shared storage, a second root) stays."""
    migration = ws.migration(migration_uuid)
    migration.check_can("complete", (EVACUATION,))
    instance = ws.consumer(migration.instance_uuid)
    check_generation(migration.instance_uuid, instance, instance_generation)
    if instance is None:
        raise ConsumerNotFound(migration.instance_uuid)
    left = {rp: dict(by_rc) for rp, by_rc in instance.allocations.items()
            if ws.provider(rp).root_uuid != migration.source_root}
    kept = {rp: by_rc for rp, by_rc in instance.devices.items() if rp in left}
    target = Target(instance.uuid, left, kept, check_units=False)
    after = reallocate(ws.provider, {instance.uuid: Holding(instance.allocations,
                                                             instance.devices)},
                       [target], request)
    new = after[instance.uuid]
    instance.set_holding(Consumer.EvacuationSourceRemoved, new.allocations, new.devices,
                         request, migration_uuid=migration_uuid)
    migration.resolve(Migration.Completed, COMPLETED, request)
