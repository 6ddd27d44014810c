"""Handlers of the custom resource class commands: create, delete, rename."""

from __future__ import annotations

from allocation_ledger.application.inputs import ResourceClassIn
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain import resource_class


def create(uow: UnitOfWork, cmd: ResourceClassIn) -> None:
    """A custom class created (refused when it exists)."""
    resource_class.create(uow, cmd.name, uow.request, exist_ok=False)


def ensure(uow: UnitOfWork, cmd: ResourceClassIn) -> None:
    """A custom class created unless it exists (nothing is written then)."""
    resource_class.create(uow, cmd.name, uow.request, exist_ok=True)


def delete(uow: UnitOfWork, cmd: ResourceClassIn) -> None:
    """A custom class deleted."""
    resource_class.delete(uow, cmd.name, uow.request)


def rename(uow: UnitOfWork, cmd: ResourceClassIn) -> None:
    """A custom class renamed: the old name deleted, the new one created, in one append."""
    resource_class.rename(uow, cmd.name, cmd.new_name or cmd.name, uow.request)
