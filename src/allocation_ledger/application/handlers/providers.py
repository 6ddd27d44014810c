"""Handlers of the provider commands: register, inventory, devices, rename, delete. Every
change to an existing provider is checked against the generation its caller expects."""

from __future__ import annotations

from typing import NamedTuple

from allocation_ledger.application.inputs import (
    ClassIn,
    DeleteProviderIn,
    DevicesSetIn,
    InventoriesIn,
    InventoryIn,
    ParentIn,
    ProviderIn,
    RenameProviderIn,
)
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain.errors import (
    ProviderExists,
    ResourceClassNotOnProvider,
)
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.provider_name import ProviderName
from allocation_ledger.domain.values import Inventory


class Registration(NamedTuple):
    """A provider to register, and the inventory it starts with (if any)."""

    provider: ProviderIn
    inventories: InventoriesIn | None


class OneInventory(NamedTuple):
    """One class's inventory to add or update on a provider."""

    target: ClassIn
    inventory: InventoryIn


def register(uow: UnitOfWork, cmd: Registration) -> None:
    """A new root provider, or a child of its parent, with its inventory if given; a
    deleted provider's UUID is registered anew on its stream."""
    new = cmd.provider
    provider = uow.any_provider(new.provider_uuid)
    if provider is not None and not provider.deleted:
        raise ProviderExists(new.provider_uuid)
    parent = uow.provider(new.parent_uuid) if new.parent_uuid else None
    if provider is None:
        provider = Provider.register(new.provider_uuid, new.name, parent, uow.request)
        uow.add(provider)
    else:
        provider.register_again(new.name, parent, uow.request)
    take_name(uow, new.name, new.provider_uuid)
    if cmd.inventories is not None:
        provider.set_inventories(_given(cmd.inventories), uow.request)


def set_inventories(uow: UnitOfWork, cmd: InventoriesIn) -> None:
    """A provider's whole inventory replaced."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    provider.set_inventories(_given(cmd), uow.request)


def set_inventory(uow: UnitOfWork, cmd: OneInventory) -> None:
    """One class's inventory added or updated, the others kept."""
    target = cmd.target
    provider = uow.provider_at(target.provider_uuid, target.expected_generation)
    inventories = {**_current(provider), target.resource_class: _inventory(cmd.inventory)}
    provider.set_inventories(inventories, uow.request)


def delete_inventory(uow: UnitOfWork, cmd: ClassIn) -> None:
    """One class removed (the domain refuses it while allocated)."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    current = _current(provider)
    if current.pop(cmd.resource_class, None) is None:
        raise ResourceClassNotOnProvider(cmd.provider_uuid, cmd.resource_class)
    provider.set_inventories(current, uow.request)


def set_devices(uow: UnitOfWork, cmd: DevicesSetIn) -> None:
    """The named devices of one device-backed class declared."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    provider.set_devices(cmd.resource_class, cmd.device_ids, uow.request)


def rename(uow: UnitOfWork, cmd: RenameProviderIn) -> None:
    """A provider renamed."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    old = provider.name
    provider.rename(cmd.name, uow.request)
    release_name(uow, old, provider.uuid)
    take_name(uow, cmd.name, provider.uuid)


def set_parent(uow: UnitOfWork, cmd: ParentIn) -> None:
    """A provider moved under another, or made a root, with every provider below it."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    parent = uow.provider(cmd.parent_uuid) if cmd.parent_uuid is not None else None
    old_parent = None
    if provider.parent_uuid is not None and provider.parent_uuid != cmd.parent_uuid:
        old_parent = uow.provider(provider.parent_uuid)
    descendants: list[Provider] = []
    pending = list(provider.children)
    while pending:
        child = uow.provider(pending.pop())
        descendants.append(child)
        pending.extend(child.children)
    provider.move_under(parent, old_parent, descendants, uow.request,
                        reparenting=cmd.reparenting)


def delete(uow: UnitOfWork, cmd: DeleteProviderIn) -> None:
    """A provider deleted (the domain refuses it while it has allocations or children)."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    parent = uow.any_provider(provider.parent_uuid) if provider.parent_uuid is not None else None
    provider.delete(parent if parent is not None and not parent.deleted else None, uow.request)
    release_name(uow, provider.name, provider.uuid)


def _inventory(model: InventoryIn) -> Inventory:
    return Inventory(**model.model_dump())


def _given(cmd: InventoriesIn) -> dict[str, Inventory]:
    return {rc: _inventory(i) for rc, i in cmd.inventories.items()}


def _current(provider: Provider) -> dict[str, Inventory]:
    return {rc: provider.inventory(rc) for rc in provider.inventories}


def take_name(uow: UnitOfWork, name: str, provider_uuid: str) -> None:
    """``provider_uuid`` takes ``name`` (:class:`ProviderNameTaken` if another holds it)."""
    found = uow.provider_name(name)
    if found is None:
        uow.add(ProviderName.take_new(name, provider_uuid, uow.request))
    else:
        found.take(provider_uuid, uow.request)


def release_name(uow: UnitOfWork, name: str, provider_uuid: str) -> None:
    """``provider_uuid`` lets ``name`` go (nothing when the name has no stream yet)."""
    found = uow.provider_name(name)
    if found is not None:
        found.release(provider_uuid, uow.request)
