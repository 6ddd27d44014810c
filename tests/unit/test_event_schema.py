"""Stored events and snapshots are a contract with every ledger already written.

Appliers run over events stored years ago, and snapshots restore an aggregate's attributes
without running ``__init__``. So adding, renaming or removing an event field or an aggregate
attribute must come with an upcaster (``class_version`` and ``upcast_vN_vN+1``) and a
deliberate update of this table; this test fails until both are done.
"""

from __future__ import annotations

import dataclasses

import pytest

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.provider_name import ProviderName
from allocation_ledger.domain.trait import Trait

BASE = {"originator_id", "originator_version", "timestamp", "request"}
CREATED = BASE | {"originator_topic"}
HOLDING = BASE | {"allocations", "devices"}
RESOLVED = HOLDING | {"status"}

EVENTS = {
    Provider.Registered: CREATED | {"provider_uuid", "name", "parent_uuid", "root_uuid"},
    Provider.Reregistered: BASE | {"provider_uuid", "name", "parent_uuid", "root_uuid"},
    Provider.InventoriesSet: BASE | {"inventories"},
    Provider.ChildAttached: BASE | {"child_uuid"},
    Provider.ChildDetached: BASE | {"child_uuid"},
    Provider.AllocationsChanged: BASE | {"consumers", "usages", "holds"},
    Provider.DevicesSet: BASE | {"resource_class", "device_ids", "inventory"},
    Provider.Renamed: BASE | {"name"},
    Provider.Deleted: BASE,
    Provider.TraitsSet: BASE | {"traits"},
    Provider.ParentChanged: BASE | {"parent_uuid", "root_uuid"},
    Provider.RootChanged: BASE | {"root_uuid"},
    Provider.AggregatesSet: BASE | {"aggregates"},
    Provider.AggregatesSetWithoutGeneration: BASE | {"aggregates"},
    Trait.Created: CREATED | {"name"},
    Trait.Deleted: BASE,
    Trait.Recreated: BASE,
    Consumer.Created: CREATED | {"consumer_uuid", "project_id", "user_id", "consumer_type",
                                 "allocations", "devices"},
    Consumer.AllocationsClaimed: HOLDING | {"project_id", "user_id", "consumer_type"},
    Consumer.AllocationsReleased: HOLDING | {"forced"},
    Consumer.AllocationsHandedOver: HOLDING | {"migration_uuid"},
    Consumer.AllocationsReturned: HOLDING | {"migration_uuid"},
    Consumer.EvacuationStarted: HOLDING | {"migration_uuid"},
    Consumer.EvacuationSourceRemoved: HOLDING | {"migration_uuid"},
    Migration.Started: CREATED | {"consumer_uuid", "project_id", "user_id", "consumer_type",
                                  "allocations", "devices", "instance_uuid", "kind",
                                  "source_root", "destination_root", "old_allocations",
                                  "old_devices", "new_allocations", "new_devices"},
    Migration.DestinationClaimed: BASE | {"destination_root", "new_allocations",
                                          "new_devices"},
    Migration.DestinationRemoved: BASE,
    Migration.Confirmed: RESOLVED,
    Migration.Reverted: RESOLVED,
    Migration.Completed: RESOLVED,
    Migration.Aborted: RESOLVED,
    ProviderName.Taken: CREATED | {"name", "provider_uuid"},
    ProviderName.Retaken: BASE | {"provider_uuid"},
    ProviderName.Released: BASE,
}

AGGREGATE = {"_id", "_version", "_created_on", "_modified_on", "_pending_events"}
CONSUMER = AGGREGATE | {"uuid", "project_id", "user_id", "consumer_type", "allocations",
                        "devices", "migration_uuid"}
ATTRIBUTES = {
    Provider: AGGREGATE | {"uuid", "name", "parent_uuid", "root_uuid", "inventories", "usages",
                           "devices", "children", "traits", "aggregates", "deleted",
                           "uncounted"},
    Consumer: CONSUMER,
    Migration: CONSUMER | {"instance_uuid", "kind", "source_root", "destination_root",
                           "old_allocations", "old_devices", "new_allocations", "new_devices",
                           "status", "started_at", "finished_at", "context_events"},
    ProviderName: AGGREGATE | {"name", "holder"},
}
#: aggregates whose snapshots were upcast once (each with its ``upcast_vN_vN+1``)
CLASS_VERSIONS = {Provider: 2}


@pytest.mark.parametrize("event", list(EVENTS), ids=lambda e: e.__qualname__)
def test_event_fields_are_the_stored_contract(event: type) -> None:
    assert {f.name for f in dataclasses.fields(event)} == EVENTS[event]


def test_every_event_class_is_in_the_contract() -> None:
    def events_of(cls: type) -> set[type]:
        return {v for v in vars(cls).values()
                if isinstance(v, type) and dataclasses.is_dataclass(v)
                and v.__qualname__.startswith(cls.__qualname__ + ".")
                and v.__qualname__ != f"{cls.__qualname__}.Event"
                and not v.__qualname__.endswith((".AllocationsSet", ".Resolved", ".ContextEvent",
                                                    ".Snapshot"))}

    # The library re-declares inherited event classes on a subclass aggregate; Migration's
    # own events are those Consumer does not have.
    own = {e for e in events_of(Migration) if e.__name__ not in vars(Consumer)}
    # Provider.Created is the library's default creation event; providers use Registered.
    mine = events_of(Provider) - {Provider.Created}  # type: ignore[attr-defined]
    names = events_of(ProviderName) - {ProviderName.Created}  # type: ignore[attr-defined]
    found = mine | events_of(Consumer) | own | names | events_of(Trait)
    assert found == set(EVENTS)


def test_aggregate_attributes_are_what_snapshots_store() -> None:
    provider = Provider.register("p", "host", None, {})
    consumer = Consumer.create("c", "pr", "us", "INSTANCE", {"p": {"VCPU": 1}}, {}, {})
    migration = Migration.start("m", consumer, "resize", "p", ({}, {}), (None, {}, {}), {})
    name = ProviderName.take_new("host", "p", {})
    for aggregate in (provider, consumer, migration, name):
        assert set(vars(aggregate)) == ATTRIBUTES[type(aggregate)], type(aggregate).__name__
        version = getattr(type(aggregate), "class_version", 1)
        assert version == CLASS_VERSIONS.get(type(aggregate), 1)
        for n in range(1, version):
            assert callable(getattr(type(aggregate), f"upcast_v{n}_v{n + 1}"))


def test_a_provider_snapshot_from_before_placements_numbering_reads_its_generation() -> None:
    """A snapshot taken before generations were Placement's (no ``uncounted``): the
    registration and each child it holds are counted out, as a replay counts them."""
    provider = Provider.register("p", "host", None, {})
    Provider.register("c", "child", provider, {})
    provider.set_inventories({}, {})
    state = {k: v for k, v in vars(provider).items() if k != "uncounted"}
    state.pop("_pending_events", None)
    old = Provider.Snapshot(originator_id=provider.id, originator_version=provider.version,
                            timestamp=provider.modified_on,
                            topic="allocation_ledger.domain.provider:Provider", state=state)
    restored = old.mutate(None)
    assert (restored.version, restored.generation) == (3, provider.generation) == (3, 1)


def test_a_provider_snapshot_from_before_traits_has_none() -> None:
    provider = Provider.register("p", "host", None, {})
    state = {k: v for k, v in vars(provider).items() if k not in {"traits", "aggregates"}}
    Provider.upcast_v1_v2(state)
    assert (state["traits"], state["aggregates"]) == ([], [])
