"""A command decides on a working copy of a provider that shares its dicts and lists with
the cached provider it was copied from (``PlainState.working_copy``). That is only sound
while no event changes a container in place: every provider event is applied here to a
working copy, and the original must be exactly as it was. A new provider event fails this
test until it has a sample below (and so has been checked)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from eventsourcing.domain import Aggregate

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory

HOST = "3e0b8a3c-5d41-4f2b-9f11-0000000000aa"
CHILD = "3e0b8a3c-5d41-4f2b-9f11-0000000000bb"
OTHER = "3e0b8a3c-5d41-4f2b-9f11-0000000000cc"
VM = "3e0b8a3c-5d41-4f2b-9f11-0000000000dd"
REQUEST = {"actor": "test", "command_id": "c"}


def a_provider() -> Provider:
    """A provider with something in every container: inventories, usages, devices (held and
    free) and children; saved (no pending events)."""
    provider = Provider.register(HOST, "host", None, REQUEST)
    provider.set_inventories({"VCPU": Inventory(8), "VGPU": Inventory(2)}, REQUEST)
    provider.set_devices("VGPU", ["g0", "g1"], REQUEST)
    provider.record_allocations([VM], {"VCPU": 2, "VGPU": 1}, {"VGPU": {"g0": VM}}, REQUEST)
    Provider.register(CHILD, "child", provider, REQUEST)
    provider.collect_events()
    return provider


SAMPLES: dict[type[Any], Callable[[Provider], None]] = {
    Provider.InventoriesSet: lambda p: p.set_inventories(
        {"VCPU": Inventory(16), "VGPU": Inventory(2), "DISK_GB": Inventory(100)}, REQUEST),
    Provider.ChildAttached: lambda p: Provider.register(OTHER, "other", p, REQUEST),
    Provider.ChildDetached: lambda p: p.trigger_event(Provider.ChildDetached,
                                                      child_uuid=CHILD, request=REQUEST),
    Provider.AllocationsChanged: lambda p: p.record_allocations(
        [VM], {"VCPU": 4, "VGPU": 2}, {"VGPU": {"g0": None, "g1": VM}}, REQUEST),
    Provider.DevicesSet: lambda p: p.set_devices("VGPU", ["g0", "g1", "g2"], REQUEST),
    Provider.Renamed: lambda p: p.rename("renamed", REQUEST),
    Provider.ParentChanged: lambda p: p.trigger_event(
        Provider.ParentChanged, parent_uuid=OTHER, root_uuid=OTHER, request=REQUEST),
    Provider.RootChanged: lambda p: p.trigger_event(
        Provider.RootChanged, root_uuid=OTHER, request=REQUEST),
    Provider.TraitsSet: lambda p: p.set_traits(["HW_CPU_X86_AVX2"], [], REQUEST),
    Provider.AggregatesSet: lambda p: p.set_aggregates(["a1"], REQUEST),
    Provider.AggregatesSetWithoutGeneration: lambda p: p.set_aggregates(["a2"], REQUEST,
                                                                        counted=False),
    Provider.Deleted: lambda p: p.trigger_event(Provider.Deleted, request=REQUEST),
    Provider.Reregistered: lambda p: p.trigger_event(
        Provider.Reregistered, provider_uuid=HOST, name="again", parent_uuid=None,
        root_uuid=HOST, request=REQUEST),
}


def provider_events() -> list[type[Any]]:
    """Every event class of the provider that changes an existing provider."""
    return [value for value in vars(Provider).values()
            if isinstance(value, type) and issubclass(value, Provider.Event)
            and not issubclass(value, Aggregate.Created) and value is not Provider.Event]


def test_every_provider_event_has_a_sample() -> None:
    assert set(provider_events()) == set(SAMPLES)


@pytest.mark.parametrize("event", sorted(SAMPLES, key=lambda e: e.__name__),
                         ids=lambda e: e.__name__)
def test_an_event_on_a_working_copy_leaves_the_original_as_it_was(event: type[Any]) -> None:
    original = a_provider()
    before = copy.deepcopy(original.__dict__)
    working = original.working_copy()
    deep = copy.deepcopy(original)
    SAMPLES[event](working)
    SAMPLES[event](deep)
    assert [type(e) for e in working.pending_events] == [event]
    assert original.__dict__ == before  # every container, and no pending event
    # the working copy decided exactly as a deep copy would have (but for the clock)
    assert _state(working) == _state(deep)


def _state(provider: Provider) -> dict[str, Any]:
    return {k: v for k, v in provider.__dict__.items()
            if k not in ("_pending_events", "_modified_on")}


def test_events_on_the_original_leave_a_working_copy_as_it_was() -> None:
    """The cache fast-forwards its provider in place: copies handed out stay whole."""
    original = a_provider()
    working = original.working_copy()
    before = copy.deepcopy(working.__dict__)
    for sample in SAMPLES.values():
        if sample is not SAMPLES[Provider.Deleted]:
            sample(original)
    assert working.__dict__ == before


def test_a_working_copy_has_its_own_pending_events() -> None:
    original = a_provider()
    original.rename("pending", REQUEST)
    working = original.working_copy()
    assert working.pending_events == original.pending_events
    working.rename("again", REQUEST)
    assert len(original.pending_events) == 1 and len(working.pending_events) == 2
    assert original.collect_events() and working.pending_events


def test_only_classes_whose_events_replace_containers_share_them() -> None:
    consumer = Consumer.create(VM, "p", "u", "INSTANCE", {HOST: {"VCPU": 1}}, {}, REQUEST)
    consumer.collect_events()
    working = consumer.working_copy()
    assert working.__dict__ == consumer.__dict__
    assert working.allocations is not consumer.allocations  # a deep copy
    assert working.allocations[HOST] is not consumer.allocations[HOST]
    provider = a_provider()
    assert provider.working_copy().devices is provider.devices  # shared: a few attributes copied


@pytest.mark.parametrize("event", sorted(SAMPLES, key=lambda e: e.__name__),
                         ids=lambda e: e.__name__)
def test_an_event_moves_the_generation_as_its_class_says(event: type[Any]) -> None:
    """Placement's numbering: an event marked ``counted`` advances the generation by one,
    any other leaves it (its applier counts it out); a registration anew starts at 0."""
    provider = a_provider()
    before = provider.generation
    SAMPLES[event](provider)
    if event is Provider.Reregistered:
        assert provider.generation == 0
    else:
        assert provider.generation == before + int(event.counted)
