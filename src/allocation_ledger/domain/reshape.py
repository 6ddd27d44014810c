"""The reshaper: the inventories and allocations of a provider tree replaced in one command.

Placement's ``POST /reshaper`` (1.30) is how nova-compute moves a class of inventory (VGPU,
say) from a root provider to a new child while the instances using it keep running: their
allocations move with the inventory in the same atomic write. The order of Placement's
``reshaper.reshape`` is kept, so each provider's generation moves as Placement's does:

1. every provider given a non-empty inventory first gets an *interim* one: what it has now
   and what it will have, the new records winning (so no class in use disappears yet and
   the moved allocations find their class where they go);
2. the consumers' allocations are rewritten by the one write rule
   (:func:`.claims.write`, capacity checked against the interim inventory, which for every
   class the provider keeps is its final one);
3. every provider gets its final inventory: a class it loses must by then be unused
   (:class:`~.errors.InventoryInUse` otherwise).

All of it is one append, so a refusal at any step writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allocation_ledger.domain import claims
from allocation_ledger.domain.consumer import check_generation
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.values import Inventory, RequestMeta
from allocation_ledger.domain.workspace import Workspace


def reshape(
    ws: Workspace,
    inventories: Mapping[str, Mapping[str, Inventory]],
    writes: Sequence[claims.ConsumerWrite],
    request: RequestMeta,
) -> None:
    """Give each provider of ``inventories`` its whole new inventory and each consumer of
    ``writes`` its whole new allocation, all or nothing (the providers' generations are
    the caller's to check before)."""
    for provider_uuid, new in inventories.items():
        if new:  # an empty one would be the provider's own inventory again (Placement)
            provider = ws.provider(provider_uuid)
            interim = {rc: provider.inventory(rc) for rc in provider.inventories}
            provider.set_inventories({**interim, **new}, request)
    changing = [w for w in writes if _changes(ws, w)]
    if changing:
        claims.write(ws, changing, request)
    for provider_uuid, new in inventories.items():
        ws.provider(provider_uuid).set_inventories(dict(new), request)


def _changes(ws: Workspace, write: claims.ConsumerWrite) -> bool:
    """Whether ``write`` changes its consumer, its generation checked either way.

    Nova sends every consumer of the tree, moved or not. One that holds nothing and is
    given nothing is left out (Placement writes nothing for it); so is a migration
    consumer given exactly what it holds (its allocations change only through the move
    commands, which a reshape leaves alone).
    """
    consumer = ws.consumer(write.consumer_uuid)
    check_generation(write.consumer_uuid, consumer, write.expected_generation)
    held = consumer.allocations if consumer is not None else {}
    if not write.allocations and not held:
        return False
    return not (isinstance(consumer, Migration) and write.allocations == held)
