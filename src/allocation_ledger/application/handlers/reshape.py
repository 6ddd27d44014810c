"""Handler of the reshape: a provider tree's inventories and allocations replaced at once."""

from __future__ import annotations

from allocation_ledger.application.inputs import ReshapeIn
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain import reshape as reshaping
from allocation_ledger.domain.claims import ConsumerWrite
from allocation_ledger.domain.values import Inventory


def reshape(uow: UnitOfWork, cmd: ReshapeIn) -> None:
    """Every named provider at the generation its caller read, then the domain's reshape."""
    for provider_uuid, given in cmd.inventories.items():
        uow.provider_at(provider_uuid, given.resource_provider_generation)
    uow.load_consumers(cmd.allocations)
    inventories = {
        provider_uuid: {rc: Inventory(**inv.model_dump()) for rc, inv in given.inventories.items()}
        for provider_uuid, given in cmd.inventories.items()
    }
    writes = [ConsumerWrite(consumer_uuid, expected_generation=w.consumer_generation,
                            **w.model_dump(exclude={"consumer_generation"}))
              for consumer_uuid, w in cmd.allocations.items()]
    reshaping.reshape(uow, inventories, writes, uow.request)
