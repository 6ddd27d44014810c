"""Provider commands of the service API: register, inventory, devices, delete."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.applying import Commands
from allocation_ledger.application.commands import CommandId, Intent, intent
from allocation_ledger.application.inputs import (
    ClassIn,
    DeleteProviderIn,
    DevicesSetIn,
    InventoriesIn,
    InventoryIn,
    ProviderIn,
    RenameProviderIn,
    RequestIn,
    parse,
)
from allocation_ledger.application.session import Session
from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain.errors import (
    ProviderExists,
    ProviderNotFound,
    ResourceClassNotOnProvider,
)
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory


def _inventory(model: InventoryIn) -> Inventory:
    return Inventory(**model.model_dump())


class ProviderCommands(Commands):
    """Commands on providers; every inventory change takes the expected provider generation
    and a stale one is a :class:`ProviderGenerationConflict`."""

    store: EventStore

    def register_provider(
        self,
        provider_uuid: str,
        name: str,
        *,
        parent_uuid: str | None = None,
        inventories: Mapping[str, Mapping[str, Any]] | None = None,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Register a root provider (a host) or a child of ``parent_uuid`` (trees of any
        depth). With ``inventories`` the inventory is set in the same append."""
        cmd = parse(ProviderIn, provider_uuid=provider_uuid, name=name,
                    parent_uuid=parent_uuid)
        invs = (parse(InventoriesIn, provider_uuid=cmd.provider_uuid, inventories=inventories,
                      expected_generation=1) if inventories else None)
        it = intent("register_provider", command_id, request, cmd, invs)

        def decide(s: Session) -> None:
            if s.any_provider(cmd.provider_uuid) is not None:
                raise ProviderExists(cmd.provider_uuid)
            parent = s.provider(cmd.parent_uuid) if cmd.parent_uuid else None
            provider = Provider.register(cmd.provider_uuid, cmd.name, parent, it.meta)
            s.add(provider)
            if invs is not None:
                provider.set_inventories(
                    {rc: _inventory(i) for rc, i in invs.inventories.items()}, it.meta
                )

        return self._provider_command(it, cmd.provider_uuid, decide)

    def _provider_command(self, it: Intent, provider_uuid: str,
                          decide: Callable[[Session], None]) -> ProviderView:
        return self._apply(it, decide,
                           lambda r: ProviderView.of(r.provider(provider_uuid)))

    def _set_inventories(self, it: Intent, provider_uuid: str, expected_generation: int,
                         change: Callable[[dict[str, Any]], Mapping[str, Any]]
                         ) -> ProviderView:
        """Replace the inventory of a provider at ``expected_generation`` with what
        ``change`` makes of its current one (class -> fields)."""

        def decide(s: Session) -> None:
            provider = s.pinned_provider(provider_uuid, expected_generation)
            new = parse(InventoriesIn, provider_uuid=provider_uuid,
                        inventories=change(dict(provider.inventories)),
                        expected_generation=expected_generation)
            provider.set_inventories(
                {rc: _inventory(i) for rc, i in new.inventories.items()}, it.meta)

        return self._provider_command(it, provider_uuid, decide)

    def set_inventories(
        self,
        provider_uuid: str,
        inventories: Mapping[str, Mapping[str, Any]],
        expected_generation: int,
        *,
        request: Mapping[str, str] | RequestIn | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Replace a provider's whole inventory (Placement's ``PUT .../inventories``)."""
        cmd = parse(InventoriesIn, provider_uuid=provider_uuid, inventories=inventories,
                    expected_generation=expected_generation)
        it = intent("set_inventories", command_id, request, cmd)
        given = {rc: i.model_dump() for rc, i in cmd.inventories.items()}
        return self._set_inventories(it, cmd.provider_uuid, cmd.expected_generation,
                                     lambda current: given)

    def set_inventory(
        self,
        provider_uuid: str,
        resource_class: str,
        inventory: Mapping[str, Any],
        expected_generation: int,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Add or update one class's inventory, keeping the others."""
        cmd = parse(ClassIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    expected_generation=expected_generation)
        one = {rc: i.model_dump() for rc, i in parse(
            InventoriesIn, provider_uuid=cmd.provider_uuid,
            inventories={cmd.resource_class: inventory},
            expected_generation=cmd.expected_generation).inventories.items()}
        it = intent("set_inventory", command_id, request, cmd, one)
        return self._set_inventories(it, cmd.provider_uuid, cmd.expected_generation,
                                     lambda current: {**current, **one})

    def delete_inventory(
        self,
        provider_uuid: str,
        resource_class: str,
        expected_generation: int,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Remove one class (refused with :class:`InventoryInUse` while it is allocated)."""
        cmd = parse(ClassIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    expected_generation=expected_generation)
        it = intent("delete_inventory", command_id, request, cmd)

        def without(current: dict[str, Any]) -> dict[str, Any]:
            if cmd.resource_class not in current:
                raise ResourceClassNotOnProvider(cmd.provider_uuid, cmd.resource_class)
            return {rc: inv for rc, inv in current.items() if rc != cmd.resource_class}

        return self._set_inventories(it, cmd.provider_uuid, cmd.expected_generation, without)

    def set_devices(
        self,
        provider_uuid: str,
        resource_class: str,
        device_ids: Sequence[str],
        expected_generation: int,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Declare the named devices of a device-backed class (PCI addresses, mdev UUIDs,
        PMEM namespaces); the class's inventory total becomes their count. Removing a held
        device is refused; ``device_ids`` is a list (not a string) of at most
        :data:`~allocation_ledger.application.inputs.MAX_DEVICE_IDS` distinct ids."""
        cmd = parse(DevicesSetIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    device_ids=device_ids, expected_generation=expected_generation)
        it = intent("set_devices", command_id, request, cmd)

        def decide(s: Session) -> None:
            provider = s.pinned_provider(cmd.provider_uuid, cmd.expected_generation)
            provider.set_devices(cmd.resource_class, cmd.device_ids, it.meta)

        return self._provider_command(it, cmd.provider_uuid, decide)

    def rename_provider(
        self,
        provider_uuid: str,
        name: str,
        expected_generation: int,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ProviderView:
        """Rename a provider (Placement's ``PUT /resource_providers/{uuid}``)."""
        cmd = parse(RenameProviderIn, provider_uuid=provider_uuid, name=name,
                    expected_generation=expected_generation)
        it = intent("rename_provider", command_id, request, cmd)

        def decide(s: Session) -> None:
            s.pinned_provider(cmd.provider_uuid, cmd.expected_generation).rename(cmd.name,
                                                                              it.meta)

        return self._provider_command(it, cmd.provider_uuid, decide)

    def delete_provider(
        self,
        provider_uuid: str,
        expected_generation: int,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> None:
        """Delete a provider (refused while it has allocations or children)."""
        cmd = parse(DeleteProviderIn, provider_uuid=provider_uuid,
                    expected_generation=expected_generation)
        it = intent("delete_provider", command_id, request, cmd)

        def decide(s: Session) -> None:
            provider = s.pinned_provider(cmd.provider_uuid, cmd.expected_generation)
            parent = None
            if provider.parent_uuid is not None:
                try:
                    parent = s.provider(provider.parent_uuid)
                except ProviderNotFound:
                    parent = None
            provider.delete(parent, it.meta)

        self._apply(it, decide, lambda r: None)
