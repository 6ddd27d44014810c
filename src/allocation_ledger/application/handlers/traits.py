"""Handlers of the trait and aggregate commands: custom traits created and deleted, a
provider's traits and aggregates replaced."""

from __future__ import annotations

from allocation_ledger.application.catalog import provider_traits
from allocation_ledger.application.inputs import ProviderAggregatesIn, ProviderTraitsIn, TraitIn
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.domain import trait as traits
from allocation_ledger.domain.errors import StandardTrait, TraitNotFound
from allocation_ledger.domain.trait import Trait


def create_trait(uow: UnitOfWork, cmd: TraitIn) -> None:
    """A custom trait created, or created again after its deletion; one that exists is
    left as it is (nothing appended)."""
    name = traits.check_custom_name(cmd.name)
    found = uow.trait(name)
    if found is None:
        uow.add(Trait.create(name, uow.request))
    elif not found.exists:
        found.create_again(uow.request)


def delete_trait(uow: UnitOfWork, cmd: TraitIn) -> None:
    """A custom trait deleted: refused for a standard trait, an unknown one, or one that
    providers have."""
    if cmd.name in traits.standard_traits():
        raise StandardTrait(cmd.name)
    found = uow.trait(cmd.name) if traits.is_custom_name(cmd.name) else None
    if found is None or not found.exists:
        raise TraitNotFound([cmd.name])
    holders = [uuid for uuid, held in provider_traits(uow.store).items() if cmd.name in held]
    found.delete(holders, uow.request)


def set_traits(uow: UnitOfWork, cmd: ProviderTraitsIn) -> None:
    """A provider's traits replaced (each must be standard or an existing custom trait)."""
    provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    custom = set()
    for name in cmd.traits:
        found = uow.trait(name) if traits.is_custom_name(name) else None
        if found is not None and found.exists:
            custom.add(name)
    provider.set_traits(cmd.traits, traits.unknown(cmd.traits, custom), uow.request)


def set_aggregates(uow: UnitOfWork, cmd: ProviderAggregatesIn) -> None:
    """A provider's aggregates replaced; checked against its generation when one is given
    (a write without one does not count as a change of the provider, as in Placement)."""
    if cmd.expected_generation is None:
        provider = uow.provider(cmd.provider_uuid)
    else:
        provider = uow.provider_at(cmd.provider_uuid, cmd.expected_generation)
    provider.set_aggregates(cmd.aggregates, uow.request,
                            counted=cmd.expected_generation is not None)
