"""The provider aggregate: one stream per resource provider.

A provider is a compute host (a root) or a nested child (NUMA node, NIC, physical GPU). Its
generation is Placement's number: 0 when it is registered (again 0 when a deleted provider's
UUID is registered anew, on the same stream), then +1 for every event that changes it —
inventory, devices, every allocation write that changes its usage or device holders.
Attaching or detaching a child and a rename are events of its stream that Placement does not
count (its generation stays): they are marked ``counted = False``, and the generation is the
stream version less the events not counted. Because every write that grows usage appends to
the provider's stream, two racing writers can never both take the last unit: the store's
unique (stream, version) key lets only one of them in.

State is plain data (dicts, lists, ints) so snapshots and appliers stay simple. Appliers only
assign; every check happens in the methods before an event is triggered. An applier gives the
provider a new dict or list rather than changing one in place, so a working copy (the one a
command decides on) shares them with the provider it was copied from, which its events leave
as it was (``shares_containers``; ``tests/unit/test_working_copies.py`` holds every event to
it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from allocation_ledger.domain import rules
from allocation_ledger.domain.errors import (
    DeviceInUse,
    InvalidInventory,
    InvalidRequest,
    InventoryInUse,
    ProviderExists,
    ProviderHasChildren,
    ProviderInUse,
    ResourceClassNotOnProvider,
    UnknownTraits,
)
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.values import Inventory, PlainState, RequestMeta


class Provider(PlainState, Aggregate):
    """A resource provider: inventory, usage, devices and children."""

    #: its events replace containers, never change them in place (see the module)
    shares_containers = True

    #: stream events that do not count in the generation, the registration included (the
    #: class default reads a provider restored without ``__init__``: registered, no more)
    uncounted: int = 1

    #: snapshots carry ``uncounted``, ``traits`` and ``aggregates`` from version 2 on (see
    #: :meth:`upcast_v1_v2`)
    class_version = 2

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot taken before generations were Placement's numbers: the events it
        stands for that do not count are its registration and its children's attachments
        (renames and detached children before it cannot be told from the snapshot and are
        counted; a snapshot is replaced by a new one every 200 events). Such a snapshot
        had no traits or aggregates either."""
        state["uncounted"] = 1 + len(state.get("children", ()))
        state.setdefault("traits", [])
        state.setdefault("aggregates", [])

    class Event(Aggregate.Event):
        """Base of every provider event; ``request`` says who asked and why."""

        #: whether the event advances the provider's generation (Placement's rule); the
        #: applier of one that does not also counts it out (``uncounted``, see below)
        counted: ClassVar[bool] = True

        request: RequestMeta

        def __init_subclass__(cls, **kwargs: Any) -> None:
            """An event class marked ``counted = False`` gets an applier that also counts
            the event out of the generation, once (a registration counts itself out in
            ``__init__``)."""
            super().__init_subclass__(**kwargs)
            applier = cls.apply
            if cls.counted or issubclass(cls, Aggregate.Created) or getattr(
                    applier, "counts_out", False):
                return

            def apply(self: Any, aggregate: Provider) -> None:
                applier(self, aggregate)
                aggregate.uncounted += 1

            apply.counts_out = True  # type: ignore[attr-defined]
            cls.apply = apply  # type: ignore[method-assign]

    class Registered(Event, Aggregate.Created):
        """A provider was registered, as a root or as a child of ``parent_uuid``."""

        counted = False

        provider_uuid: str
        name: str
        parent_uuid: str | None
        root_uuid: str

    class Reregistered(Event):
        """A deleted provider's UUID was registered anew (Nova restarting a compute service
        with its stable id, an Ironic rebalance): its stream goes on, its state starts
        afresh as :class:`Registered` starts it, and its generation is 0 again."""

        provider_uuid: str
        name: str
        parent_uuid: str | None
        root_uuid: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.__init__(  # type: ignore[misc]
                self.provider_uuid, self.name, self.parent_uuid, self.root_uuid)
            aggregate.uncounted = self.originator_version  # generation 0 again

    class InventoriesSet(Event):
        """The provider's whole inventory was replaced by ``inventories`` (class -> fields)."""

        inventories: dict[str, dict[str, Any]]

        def apply(self, aggregate: Provider) -> None:
            aggregate.inventories = {rc: dict(v) for rc, v in self.inventories.items()}

    class ChildAttached(Event):
        """A child provider was registered under this one (not a change of its own)."""

        counted = False

        child_uuid: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.children = sorted({*aggregate.children, self.child_uuid})

    class ChildDetached(Event):
        """A child provider of this one was deleted (not a change of its own)."""

        counted = False

        child_uuid: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.children = [c for c in aggregate.children if c != self.child_uuid]

    class AllocationsChanged(Event):
        """A write by ``consumers`` changed this provider's usage or device holders.

        ``usages`` holds the new usage of each class that changed; ``holds`` the new holder
        (a consumer uuid, or ``None`` for free) of each device that changed hands.
        """

        consumers: list[str]
        usages: dict[str, int]
        holds: dict[str, dict[str, str | None]]

        def apply(self, aggregate: Provider) -> None:
            aggregate.usages = {**aggregate.usages, **self.usages}
            if self.holds:
                devices = aggregate.devices
                aggregate.devices = {**devices, **{
                    rc: {**devices.get(rc, {}), **changes} for rc, changes in self.holds.items()
                }}

    class TraitsSet(Event):
        """The provider's traits became ``traits`` (the whole set, sorted): Placement's
        ``PUT``/``DELETE .../traits``, which counts as a change of the provider."""

        traits: list[str]

        def apply(self, aggregate: Provider) -> None:
            aggregate.traits = list(self.traits)

    class AggregatesSet(Event):
        """The provider's aggregates became ``aggregates`` (the whole set of aggregate
        UUIDs, sorted), by a write that named the provider's generation (Placement 1.19 on),
        which counts as a change of the provider."""

        aggregates: list[str]

        def apply(self, aggregate: Provider) -> None:
            aggregate.aggregates = list(self.aggregates)

    class AggregatesSetWithoutGeneration(AggregatesSet):
        """The provider's aggregates became ``aggregates`` by a write that named no
        generation (Placement's API before 1.19), which Placement does not count: the
        provider's generation stays."""

        counted = False

    class ParentChanged(Event):
        """The provider was moved under ``parent_uuid`` (``None``: it became a root), into
        the tree of ``root_uuid``; Placement keeps the generation (1.37's re-parenting)."""

        counted = False

        parent_uuid: str | None
        root_uuid: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.parent_uuid = self.parent_uuid
            aggregate.root_uuid = self.root_uuid

    class RootChanged(Event):
        """An ancestor of the provider was moved: its tree's root became ``root_uuid``
        (not a change of its own: the generation stays)."""

        counted = False

        root_uuid: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.root_uuid = self.root_uuid

    class DevicesSet(Event):
        """The devices of ``resource_class`` became ``device_ids`` and the class's inventory
        became ``inventory`` (``None`` when the last device went)."""

        resource_class: str
        device_ids: list[str]
        inventory: dict[str, Any] | None

        def apply(self, aggregate: Provider) -> None:
            held = aggregate.devices.get(self.resource_class, {})
            devices = dict(aggregate.devices)
            if self.device_ids:
                devices[self.resource_class] = {d: held.get(d) for d in sorted(self.device_ids)}
            else:
                devices.pop(self.resource_class, None)
            aggregate.devices = devices
            inventories = dict(aggregate.inventories)
            if self.inventory is None:
                inventories.pop(self.resource_class, None)
            else:
                inventories[self.resource_class] = dict(self.inventory)
            aggregate.inventories = inventories

    class Renamed(Event):
        """The provider's name became ``name`` (Placement keeps the generation)."""

        counted = False

        name: str

        def apply(self, aggregate: Provider) -> None:
            aggregate.name = self.name

    class Deleted(Event):
        """The provider was deleted; its UUID may be registered again
        (:class:`Reregistered`)."""

        def apply(self, aggregate: Provider) -> None:
            aggregate.deleted = True

    def __init__(
        self, provider_uuid: str, name: str, parent_uuid: str | None, root_uuid: str
    ) -> None:
        self.uuid = provider_uuid
        self.name = name
        self.parent_uuid = parent_uuid
        self.root_uuid = root_uuid
        self.inventories: dict[str, dict[str, Any]] = {}
        self.usages: dict[str, int] = {}
        self.devices: dict[str, dict[str, str | None]] = {}
        self.children: list[str] = []
        self.traits: list[str] = []
        self.aggregates: list[str] = []
        self.deleted = False
        self.uncounted = 1  # the registration itself (``counted = False``)

    # -- creation -------------------------------------------------------------------------

    @classmethod
    def register(
        cls,
        provider_uuid: str,
        name: str,
        parent: Provider | None,
        request: RequestMeta,
    ) -> Provider:
        """A new provider; when ``parent`` is given the parent records the child too."""
        root_uuid = parent.root_uuid if parent else provider_uuid
        provider = cls._create(
            cls.Registered,
            id=provider_stream_id(provider_uuid),
            provider_uuid=provider_uuid,
            name=name,
            parent_uuid=parent.uuid if parent else None,
            root_uuid=root_uuid,
            request=request,
        )
        if parent is not None:
            parent.trigger_event(cls.ChildAttached, child_uuid=provider_uuid, request=request)
        return provider

    def register_again(self, name: str, parent: Provider | None, request: RequestMeta) -> None:
        """Register this deleted provider's UUID anew, as a root or under ``parent``."""
        if not self.deleted:
            raise ProviderExists(self.uuid)
        self.trigger_event(
            self.Reregistered,
            provider_uuid=self.uuid,
            name=name,
            parent_uuid=parent.uuid if parent else None,
            root_uuid=parent.root_uuid if parent else self.uuid,
            request=request,
        )
        if parent is not None:
            parent.trigger_event(self.ChildAttached, child_uuid=self.uuid, request=request)

    # -- reads ----------------------------------------------------------------------------

    @property
    def stream_id(self) -> UUID:
        """The provider's stream id."""
        return self.id

    @property
    def generation(self) -> int:
        """Placement's generation: 0 when registered, +1 for each change since."""
        return self.version - self.uncounted

    def inventory(self, resource_class: str) -> Inventory:
        """The class's inventory; :class:`ResourceClassNotOnProvider` if it has none."""
        try:
            return Inventory.from_dict(self.inventories[resource_class])
        except KeyError:
            raise ResourceClassNotOnProvider(self.uuid, resource_class) from None

    def used(self, resource_class: str) -> int:
        """Current usage of a class (0 when nothing is allocated)."""
        return self.usages.get(resource_class, 0)

    def is_device_backed(self, resource_class: str) -> bool:
        """True when the class is handed out as named devices on this provider."""
        return bool(self.devices.get(resource_class))

    def free_devices(self, resource_class: str) -> list[str]:
        """Free device ids of a class, lowest first."""
        return sorted(d for d, h in self.devices.get(resource_class, {}).items() if h is None)

    # -- commands -------------------------------------------------------------------------

    def set_inventories(self, inventories: dict[str, Inventory], request: RequestMeta) -> None:
        """Replace the whole inventory. Lowering below usage is allowed (the provider then
        reports over capacity); removing a class still in use is refused."""
        for rc, inv in inventories.items():
            rules.validate_inventory(self.uuid, rc, inv)
            devices = self.devices.get(rc)
            if devices and inv.total != len(devices):
                raise InvalidInventory(
                    self.uuid, rc, f"total must equal its {len(devices)} devices"
                )
        for rc in self.inventories:
            if rc in inventories:
                continue
            if self.used(rc) > 0:
                raise InventoryInUse(self.uuid, rc, self.used(rc))
            if self.devices.get(rc):
                raise DeviceInUse(self.uuid, rc, "remove its devices before its inventory")
        self.trigger_event(
            self.InventoriesSet,
            inventories={rc: inv.to_dict() for rc, inv in sorted(inventories.items())},
            request=request,
        )

    def set_devices(
        self, resource_class: str, device_ids: list[str], request: RequestMeta
    ) -> None:
        """Declare the devices of a class (the class's inventory total follows their count).

        Removing a held device is refused; declaring devices for a class that already has
        allocations without devices is refused (those allocations would hold no device).
        """
        current = self.devices.get(resource_class, {})
        wanted = set(device_ids)
        if len(wanted) != len(device_ids):
            doubled = sorted(d for d, n in Counter(device_ids).items() if n > 1)
            shown = ", ".join(doubled[:10]) + (f" and {len(doubled) - 10} more"
                                                if len(doubled) > 10 else "")
            raise InvalidRequest(
                f"device ids named twice for {resource_class} on provider {self.uuid}: "
                f"{shown}",
                provider_uuid=self.uuid, resource_class=resource_class, devices=doubled,
            )
        held_removed = sorted(d for d, h in current.items() if h is not None and d not in wanted)
        if held_removed:
            raise DeviceInUse(
                self.uuid, resource_class, f"devices {', '.join(held_removed)} are held"
            )
        if not current and not wanted:
            raise InvalidRequest(
                f"{resource_class} on provider {self.uuid} has no devices to remove",
                provider_uuid=self.uuid, resource_class=resource_class,
            )
        if not current and self.used(resource_class) > 0:
            raise DeviceInUse(
                self.uuid,
                resource_class,
                f"{self.used(resource_class)} already allocated without devices",
            )
        inventory: dict[str, Any] | None = None
        if wanted:
            base = self.inventories.get(resource_class, {"total": len(wanted)})
            inv = Inventory.from_dict({**base, "total": len(wanted)})
            if inv.reserved > inv.total:
                inv = Inventory.from_dict({**inv.to_dict(), "reserved": inv.total})
            rules.validate_inventory(self.uuid, resource_class, inv)
            inventory = inv.to_dict()
        self.trigger_event(
            self.DevicesSet,
            resource_class=resource_class,
            device_ids=sorted(wanted),
            inventory=inventory,
            request=request,
        )

    def record_allocations(
        self,
        consumers: list[str],
        usages: dict[str, int],
        holds: dict[str, dict[str, str | None]],
        request: RequestMeta,
    ) -> None:
        """Record a write's effect, already checked by ``reallocation.reallocate``."""
        self.trigger_event(
            self.AllocationsChanged,
            consumers=sorted(consumers),
            usages=dict(sorted(usages.items())),
            holds={rc: dict(sorted(h.items())) for rc, h in sorted(holds.items())},
            request=request,
        )

    def set_traits(self, traits: list[str], unknown: list[str], request: RequestMeta) -> None:
        """Replace the provider's traits with ``traits``; :class:`UnknownTraits` when some
        of them (``unknown``: neither standard nor an existing custom trait) do not exist.
        Setting the same set again is a change too, as in Placement (its generation
        advances)."""
        if unknown:
            raise UnknownTraits(self.uuid, sorted(unknown))
        self.trigger_event(self.TraitsSet, traits=sorted(set(traits)), request=request)

    def set_aggregates(self, aggregates: list[str], request: RequestMeta, *,
                       counted: bool = True) -> None:
        """Replace the provider's aggregates (UUIDs); ``counted`` false for a write that
        names no generation (Placement before 1.19), which leaves the generation as it is."""
        event = self.AggregatesSet if counted else self.AggregatesSetWithoutGeneration
        self.trigger_event(event, aggregates=sorted(set(aggregates)), request=request)

    def move_under(self, parent: Provider | None, old_parent: Provider | None,
                   descendants: list[Provider], request: RequestMeta, *,
                   reparenting: bool = True) -> None:
        """Give the provider a new parent (``None``: make it a root), its old and new
        parents and every provider below it following (their root changes with it).

        Placement's rules: a root may be put under a parent at any version; moving a
        child to another parent, or making it a root, needs ``reparenting`` (1.37); a
        provider cannot go under itself or under one of its descendants (a loop).
        """
        new_uuid = parent.uuid if parent is not None else None
        if new_uuid == self.parent_uuid:
            return
        if self.parent_uuid is not None and not reparenting:
            doing = "re-parenting" if parent is not None else "un-parenting"
            raise InvalidRequest(f"{doing} a provider is not currently allowed.",
                                 provider_uuid=self.uuid, parent_uuid=new_uuid)
        below = {self.uuid, *(d.uuid for d in descendants)}
        if new_uuid in below:
            raise InvalidRequest("creating loop in the provider tree is not allowed.",
                                 provider_uuid=self.uuid, parent_uuid=new_uuid)
        root = parent.root_uuid if parent is not None else self.uuid
        self.trigger_event(self.ParentChanged, parent_uuid=new_uuid, root_uuid=root,
                           request=request)
        if old_parent is not None:
            old_parent.trigger_event(self.ChildDetached, child_uuid=self.uuid,
                                     request=request)
        if parent is not None:
            parent.trigger_event(self.ChildAttached, child_uuid=self.uuid, request=request)
        for below_it in descendants:
            if below_it.root_uuid != root:
                below_it.trigger_event(self.RootChanged, root_uuid=root, request=request)

    def rename(self, name: str, request: RequestMeta) -> None:
        """Give the provider a new name (its UUID, tree and history stay)."""
        if name == self.name:
            raise InvalidRequest(f"provider {self.uuid} is already named {name!r}",
                                 provider_uuid=self.uuid, name=name)
        self.trigger_event(self.Renamed, name=name, request=request)

    def delete(self, parent: Provider | None, request: RequestMeta) -> None:
        """Delete the provider (refused while it has allocations or children)."""
        in_use = sorted(rc for rc, used in self.usages.items() if used > 0)
        if in_use:
            raise ProviderInUse(self.uuid, f"it has allocations of {', '.join(in_use)}")
        if self.children:
            raise ProviderHasChildren(self.uuid, list(self.children))
        self.trigger_event(self.Deleted, request=request)
        if parent is not None:
            parent.trigger_event(self.ChildDetached, child_uuid=self.uuid, request=request)


