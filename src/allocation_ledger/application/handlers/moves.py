"""Handlers of the move commands: swap, confirm, revert, forced live migration, evacuation
and its completion. Each checks every generation it depends on; a refused or conflicting
move leaves the ledger exactly as it was."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from allocation_ledger.application.inputs import MoveIn, ResolveIn
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain import moves
from allocation_ledger.domain.values import Allocations


class Swap(NamedTuple):
    """A move to start, and its kind (resize, cold or live migration)."""

    move: MoveIn
    kind: str


def swap(uow: UnitOfWork, cmd: Swap) -> None:
    """The instance's allocation and devices go to a new migration consumer."""
    move = cmd.move
    moves.swap(uow, move.instance_uuid, move.migration_uuid, cmd.kind,
               move.expected_generation, uow.request, _plain(move.destination))


def confirm(uow: UnitOfWork, cmd: ResolveIn) -> None:
    """The migration's source allocation released; the move confirmed."""
    moves.confirm(uow, cmd.migration_uuid, cmd.expected_generation, uow.request)


def revert(uow: UnitOfWork, cmd: ResolveIn) -> None:
    """The destination released, the source handed back; the move reverted."""
    moves.revert(uow, cmd.migration_uuid, cmd.expected_generation, cmd.instance_generation,
                 uow.request)


def force_live_migrate(uow: UnitOfWork, cmd: MoveIn) -> None:
    """A swap and a blind copy of the allocation to the named host."""
    moves.force_live_migrate(uow, cmd.instance_uuid, cmd.migration_uuid,
                             cmd.destination_root or "", cmd.expected_generation, uow.request)


def evacuate(uow: UnitOfWork, cmd: MoveIn) -> None:
    """The instance holds its source and its destination at once."""
    moves.evacuate(uow, cmd.instance_uuid, cmd.migration_uuid, cmd.expected_generation,
                   uow.request, destination=_plain(cmd.destination),
                   destination_root=cmd.destination_root)


def complete_evacuation(uow: UnitOfWork, cmd: ResolveIn) -> None:
    """The evacuated instance's source share removed; the evacuation completed."""
    moves.complete_evacuation(uow, cmd.migration_uuid, cmd.instance_generation, uow.request)


def _plain(allocations: Mapping[str, Mapping[str, int]] | None) -> Allocations | None:
    if allocations is None:
        return None
    return {rp: dict(r) for rp, r in allocations.items()}
