"""What the service API's reads return: frozen snapshots of one moment of the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from allocation_ledger.domain import rules
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Allocations, Devices, Inventory


@dataclass(frozen=True)
class ClassUsage:
    """One class on one provider: inventory, usage, capacity and what is free.
    ``inventory`` is ``None`` for a class still in use that has no inventory any more
    (capacity 0: over capacity)."""

    resource_class: str
    inventory: Inventory | None
    used: int

    @property
    def capacity(self) -> int:
        """``(total - reserved) * allocation_ratio``, floored; 0 without an inventory."""
        return self.inventory.capacity if self.inventory is not None else 0

    @property
    def free(self) -> int:
        """Capacity not in use (0 when over capacity)."""
        return rules.free(self.capacity, self.used)

    @property
    def over_capacity(self) -> bool:
        """True when usage exceeds capacity (the inventory was lowered under it)."""
        return rules.over_capacity(self.capacity, self.used)


@dataclass(frozen=True)
class ProviderView:
    """A provider: its place in the tree, inventory, usage, devices and generation."""

    provider_uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str
    children: tuple[str, ...]
    classes: dict[str, ClassUsage]
    devices: dict[str, dict[str, str | None]]
    #: its traits and the aggregates (UUIDs) it is in, sorted
    traits: tuple[str, ...] = ()
    aggregates: tuple[str, ...] = ()
    #: True when this is the outcome of an earlier call with the same command id, read back
    #: from the ledger as that command left it (this call appended nothing)
    replayed: bool = False

    @property
    def inventories(self) -> dict[str, Inventory]:
        """Class -> inventory (the classes that have one)."""
        return {rc: c.inventory for rc, c in self.classes.items() if c.inventory is not None}

    @property
    def usages(self) -> dict[str, int]:
        """Class -> amount in use (every class with inventory, 0 when unused)."""
        return {rc: c.used for rc, c in self.classes.items()}

    @classmethod
    def of(cls, provider: Provider) -> ProviderView:
        """The view of a loaded provider aggregate."""
        classes = {
            rc: ClassUsage(rc, provider.inventory(rc), provider.used(rc))
            for rc in sorted(provider.inventories)
        }
        for rc, used in provider.usages.items():  # usage of a class no longer in inventory
            if rc not in classes and used:
                classes[rc] = ClassUsage(rc, None, used)
        return cls(
            provider_uuid=provider.uuid,
            name=provider.name,
            generation=provider.generation,
            parent_uuid=provider.parent_uuid,
            root_uuid=provider.root_uuid,
            children=tuple(provider.children),
            classes=classes,
            devices={rc: dict(sorted(d.items())) for rc, d in sorted(provider.devices.items())},
            traits=tuple(provider.traits),
            aggregates=tuple(provider.aggregates),
        )


@dataclass(frozen=True)
class ConsumerView:
    """A consumer: generation (``None`` when it holds nothing), allocations and devices."""

    consumer_uuid: str
    generation: int | None
    allocations: Allocations = field(default_factory=dict)
    devices: Devices = field(default_factory=dict)
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None
    migration_uuid: str | None = None
    #: True when this is the outcome of an earlier call with the same command id, read back
    #: from the ledger as that command left it (this call appended nothing)
    replayed: bool = False

    @classmethod
    def of(cls, consumer_uuid: str, consumer: Consumer | None,
           migration_uuid: str | None = None) -> ConsumerView:
        """The view of a loaded consumer (``None``: never written)."""
        if consumer is None:
            return cls(consumer_uuid, None)
        return cls(
            consumer_uuid=consumer_uuid,
            generation=consumer.generation,
            allocations={rp: dict(r) for rp, r in consumer.allocations.items()},
            devices={rp: {rc: list(d) for rc, d in by.items()}
                     for rp, by in consumer.devices.items()},
            project_id=consumer.project_id,
            user_id=consumer.user_id,
            consumer_type=consumer.consumer_type,
            migration_uuid=migration_uuid,
        )


@dataclass(frozen=True)
class MigrationView:
    """A migration's context, what it holds, and its status."""

    migration_uuid: str
    instance_uuid: str
    kind: str
    status: str
    generation: int | None
    source_root: str
    destination_root: str | None
    allocations: Allocations
    devices: Devices
    old_allocations: Allocations
    old_devices: Devices
    new_allocations: Allocations
    new_devices: Devices
    started_at: datetime
    finished_at: datetime | None
    #: True when this is the outcome of an earlier call with the same command id, read back
    #: from the ledger as that command left it (this call appended nothing)
    replayed: bool = False

    def age_seconds(self, now: datetime) -> float:
        """Seconds since the move started (until it finished, if it has)."""
        return ((self.finished_at or now) - self.started_at).total_seconds()

    @classmethod
    def of(cls, m: Migration) -> MigrationView:
        """The view of a loaded migration aggregate."""
        return cls(
            migration_uuid=m.uuid, instance_uuid=m.instance_uuid, kind=m.kind, status=m.status,
            generation=m.generation, source_root=m.source_root,
            destination_root=m.destination_root, allocations=m.allocations, devices=m.devices,
            old_allocations=m.old_allocations, old_devices=m.old_devices,
            new_allocations=m.new_allocations, new_devices=m.new_devices,
            started_at=m.started_at, finished_at=m.finished_at,
        )
