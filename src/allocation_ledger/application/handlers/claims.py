"""Handlers of the allocation commands: claim, write, release, force release."""

from __future__ import annotations

from allocation_ledger.application.inputs import (
    ClaimIn,
    ConsumerWriteIn,
    ReleaseIn,
    WritesIn,
)
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain import claims


def claim(uow: UnitOfWork, cmd: ClaimIn) -> None:
    """One consumer takes these allocations (mid-move: its destination)."""
    claims.write(uow, [write_of(cmd)], uow.request)


def write_allocations(uow: UnitOfWork, cmd: WritesIn) -> None:
    """Several consumers' allocations replaced at once, all or nothing."""
    uow.load_consumers(w.consumer_uuid for w in cmd.writes)
    claims.write(uow, [write_of(w) for w in cmd.writes], uow.request)


def release(uow: UnitOfWork, cmd: ReleaseIn) -> None:
    """A consumer gives up what it holds, at its generation."""
    claims.release(uow, cmd.consumer_uuid, cmd.expected_generation, uow.request)


def force_release(uow: UnitOfWork, cmd: ReleaseIn) -> None:
    """A consumer gives up what it holds, whatever its generation (a deletion)."""
    claims.release(uow, cmd.consumer_uuid, None, uow.request, forced=True)


def write_of(cmd: ConsumerWriteIn) -> claims.ConsumerWrite:
    """The domain's write of a validated consumer write (the same fields, as plain copies:
    the domain never changes the command's own)."""
    return claims.ConsumerWrite(**cmd.model_dump())
