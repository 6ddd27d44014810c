"""The service API: :class:`Ledger`, a façade over the command handlers.

Each command method does three things: it validates its arguments into the command's input
model (:mod:`.inputs`), makes the command's intent (its id and the fingerprint of those
arguments, :mod:`.command_ids`), and hands both to its handler (:mod:`.handlers`) through
:func:`.command_ids.handle`, with the view its caller gets back. The handler loads through a
unit of work and lets the domain decide; everything the command changed is appended in one
atomic write. A rejected command raises a
:class:`~allocation_ledger.domain.errors.LedgerError` and writes nothing. The reads at the
end load the streams directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict, TypeVar, Unpack

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application import catalog
from allocation_ledger.application.candidates import CandidatesSource
from allocation_ledger.application.command_ids import (
    CommandId,
    Reader,
    command_id_of,
    guarded_read,
    handle,
    intent,
)
from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.handlers import claims, moves, providers
from allocation_ledger.application.handlers import reshape as reshaping
from allocation_ledger.application.handlers import resource_classes as classes
from allocation_ledger.application.handlers import traits as traits_handler
from allocation_ledger.application.inputs import (
    AgeIn,
    ClaimIn,
    ClassIn,
    DeleteProviderIn,
    DevicesSetIn,
    InventoriesIn,
    MoveIn,
    ParentIn,
    ProviderAggregatesIn,
    ProviderIn,
    ProviderTraitsIn,
    ReleaseIn,
    RenameProviderIn,
    RequestIn,
    ReshapeIn,
    ResolveIn,
    ResourceClassIn,
    TraitIn,
    TraitsQueryIn,
    WritesIn,
    canonical_uuid,
    parse,
)
from allocation_ledger.application.lookup import CommandView, lookup
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.application.readside import ReadSide
from allocation_ledger.application.unit_of_work import Handler, UnitOfWork
from allocation_ledger.application.views import ConsumerView, MigrationView, ProviderView
from allocation_ledger.domain import trait as trait_rules
from allocation_ledger.domain.candidates_request import Candidates, CandidatesRequest
from allocation_ledger.domain.consumer import INSTANCE
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.ids import (
    consumer_stream_id,
    provider_stream_id,
    resource_class_stream_id,
)
from allocation_ledger.domain.migration import RESIZE, Migration, started_by
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.resource_class import ResourceClass

C = TypeVar("C")
T = TypeVar("T")


class CommandOptions(TypedDict, total=False):
    """What every command of :class:`Ledger` takes besides its own arguments, by keyword."""

    #: who asks and why (``actor``, ``project``, ``request_id``, ``reason``), stored with
    #: every event the command appends
    request: Mapping[str, str] | RequestIn | None
    #: a string or UUID the caller chooses: a command is applied at most once per id, and a
    #: retry with the same id returns the first call's outcome with ``replayed`` set (see
    #: :mod:`.command_ids`)
    command_id: CommandId | None


COMMAND_OPTIONS = frozenset(CommandOptions.__annotations__)


class Ledger:
    """The allocation ledger's service API over one event store.

    Open one with :func:`allocation_ledger.open_ledger`. Commands take the generations
    they depend on (``None`` for a consumer that holds nothing) and, by keyword, the
    :class:`CommandOptions` (an optional ``request`` mapping with ``actor``, ``request_id``
    and ``reason``, stored with every event, and an optional ``command_id``).
    Safe to share between threads; many processes may write to one PostgreSQL store.
    """

    def __init__(self, store: EventStore, *, policy: WritePolicy | None = None,
                 group_commit: bool = False) -> None:
        self.store = store
        #: what a command's attempts may take unread, and how clashes are retried
        self.policy = policy or WritePolicy()
        #: the group commit of this ledger's threads (``None``: off)
        self.commits = GroupCommit(store, self.policy) if group_commit else None
        self.read_side: ReadSide | None = None
        #: the providers in memory for allocation candidates, kept up with the store
        self.candidates_source = CandidatesSource(store)

    def _reader(self) -> UnitOfWork:
        """A unit of work to read the ledger's current state with (never committed)."""
        return UnitOfWork(self.store)

    @property
    def reads(self) -> ReadSide:
        """Queries over the projections (host usage, free capacity, devices of a host,
        migrations in flight), caught up with the ledger first. Open the ledger with
        ``open_ledger(url, read_side=True)`` to have them."""
        if self.read_side is None:
            raise InvalidRequest(
                "this ledger was opened without its read side: use "
                "open_ledger(url, read_side=True)"
            )
        return self.read_side

    def close(self) -> None:
        """Release the store's (and the read side's) connections."""
        if self.read_side is not None:
            self.read_side.close()
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- allocations ------------------------------------------------------------------------

    def claim(
        self,
        consumer_uuid: str,
        allocations: Mapping[str, Mapping[str, int]],
        expected_generation: int | None,
        *,
        project_id: str,
        user_id: str,
        consumer_type: str = INSTANCE,
        devices: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        **options: Unpack[CommandOptions],
    ) -> ConsumerView:
        """Give one consumer these allocations (provider -> class -> amount), replacing what it
        held. ``expected_generation`` is ``None`` for a new or emptied consumer, else its
        current generation. Device-backed classes take free devices, lowest id first, unless
        ``devices`` (provider -> class -> ids) names them. Returns the consumer afterwards.
        """
        cmd = parse(ClaimIn, consumer_uuid=consumer_uuid, allocations=allocations,
                    expected_generation=expected_generation, project_id=project_id,
                    user_id=user_id, consumer_type=consumer_type, devices=devices or {})
        new = [cmd.consumer_uuid] if cmd.expected_generation is None else []
        return self._handle("claim", options, claims.claim, cmd,
                            lambda r: _consumer(r, cmd.consumer_uuid), new)

    def write_allocations(
        self,
        writes: Sequence[Mapping[str, Any]],
        **options: Unpack[CommandOptions],
    ) -> list[ConsumerView]:
        """Replace the allocations of several consumers in one atomic write (Placement's
        ``POST /allocations``). Each item has ``consumer_uuid``, ``allocations`` (empty to
        release), ``expected_generation``, ``project_id``, ``user_id`` and optionally
        ``consumer_type`` and ``devices``. All succeed or none does.
        """
        if isinstance(writes, Sequence) and not isinstance(writes, str) and not writes:
            raise InvalidRequest("a write needs at least one consumer")
        cmd = parse(WritesIn, writes=writes)
        new = [c.consumer_uuid for c in cmd.writes if c.expected_generation is None]
        return self._handle("write_allocations", options, claims.write_allocations, cmd,
                            lambda r: [_consumer(r, c.consumer_uuid) for c in cmd.writes], new,
                            inputs=cmd.writes)

    def reshape(
        self,
        inventories: Mapping[str, Mapping[str, Any]],
        allocations: Mapping[str, Mapping[str, Any]],
        **options: Unpack[CommandOptions],
    ) -> dict[str, ProviderView]:
        """Replace the inventories of several providers and the allocations of several
        consumers in one atomic write (Placement's ``POST /reshaper``): a class of inventory
        moves from a root to a child, say, and the allocations using it move with it.

        ``inventories`` maps each provider to ``{"resource_provider_generation",
        "inventories"}`` (its whole new inventory, at the generation the caller read: a
        stale one is a :class:`ProviderGenerationConflict`); ``allocations`` maps each
        consumer to ``{"allocations", "project_id", "user_id", "consumer_generation"}``
        and optionally ``consumer_type`` (an empty allocation releases). Capacity is
        checked against the final inventories, so a class may leave a provider because
        its allocations leave in the same write. Returns the views of the providers of
        ``inventories`` afterwards.
        """
        cmd = parse(ReshapeIn, inventories=inventories, allocations=allocations)
        new = [c for c, w in cmd.allocations.items() if w.consumer_generation is None]
        return self._handle("reshape", options, reshaping.reshape, cmd,
                            lambda r: {p: _provider(p)(r) for p in cmd.inventories}, new)

    def release(
        self,
        consumer_uuid: str,
        expected_generation: int | None,
        **options: Unpack[CommandOptions],
    ) -> bool:
        """Remove a consumer's allocations and devices, checking its generation; ``False``,
        with nothing written, for a consumer that holds nothing (``expected_generation``
        ``None``). An instance mid-move gives up only its destination: the migration keeps
        the source, open for a new destination claim or a revert. Mid-evacuation, or for a
        migration consumer, the move is aborted. Returns ``True`` when something was
        released."""
        cmd = parse(ReleaseIn, consumer_uuid=consumer_uuid,
                    expected_generation=expected_generation)
        return self._handle("release", options, claims.release, cmd, _appended)

    def force_release(self, consumer_uuid: str, **options: Unpack[CommandOptions]) -> bool:
        """Release ignoring the generation; ``False`` (a no-op) if it held nothing. An
        instance mid-move is being deleted: its migration's allocations are released too
        and the move is aborted."""
        cmd = parse(ReleaseIn, consumer_uuid=consumer_uuid, expected_generation=None)
        return self._handle("force_release", options, claims.force_release, cmd, _appended)

    # -- providers --------------------------------------------------------------------------

    def register_provider(
        self,
        provider_uuid: str,
        name: str,
        *,
        parent_uuid: str | None = None,
        inventories: Mapping[str, Mapping[str, Any]] | None = None,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Register a root provider (a host) or a child of ``parent_uuid`` (trees of any
        depth). With ``inventories`` the inventory is set in the same append."""
        cmd = parse(ProviderIn, provider_uuid=provider_uuid, name=name,
                    parent_uuid=parent_uuid)
        invs = (parse(InventoriesIn, provider_uuid=cmd.provider_uuid, inventories=inventories,
                      expected_generation=0) if inventories else None)
        return self._handle("register_provider", options, providers.register,
                            providers.Registration(cmd, invs), _provider(cmd.provider_uuid),
                            inputs=(cmd, invs))

    def set_inventories(
        self,
        provider_uuid: str,
        inventories: Mapping[str, Mapping[str, Any]],
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Replace a provider's whole inventory (Placement's ``PUT .../inventories``).
        Every inventory change takes the expected provider generation; a stale one is a
        :class:`ProviderGenerationConflict`."""
        cmd = parse(InventoriesIn, provider_uuid=provider_uuid, inventories=inventories,
                    expected_generation=expected_generation)
        return self._handle("set_inventories", options, providers.set_inventories, cmd,
                            _provider(cmd.provider_uuid))

    def set_inventory(
        self,
        provider_uuid: str,
        resource_class: str,
        inventory: Mapping[str, Any],
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Add or update one class's inventory, keeping the others."""
        cmd = parse(ClassIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    expected_generation=expected_generation)
        given = parse(InventoriesIn, provider_uuid=cmd.provider_uuid,
                      inventories={cmd.resource_class: inventory},
                      expected_generation=cmd.expected_generation)
        one = given.inventories[cmd.resource_class]
        return self._handle("set_inventory", options, providers.set_inventory,
                            providers.OneInventory(cmd, one), _provider(cmd.provider_uuid),
                            inputs=(cmd, {cmd.resource_class: one.model_dump()}))

    def delete_inventory(
        self,
        provider_uuid: str,
        resource_class: str,
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Remove one class (refused with :class:`InventoryInUse` while it is allocated)."""
        cmd = parse(ClassIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    expected_generation=expected_generation)
        return self._handle("delete_inventory", options, providers.delete_inventory, cmd,
                            _provider(cmd.provider_uuid))

    def set_devices(
        self,
        provider_uuid: str,
        resource_class: str,
        device_ids: Sequence[str],
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Declare the named devices of a device-backed class (PCI addresses, mdev UUIDs,
        PMEM namespaces); the class's inventory total becomes their count. Removing a held
        device is refused; ``device_ids`` is a list (not a string) of at most
        :data:`~allocation_ledger.application.inputs.MAX_DEVICE_IDS` distinct ids."""
        cmd = parse(DevicesSetIn, provider_uuid=provider_uuid, resource_class=resource_class,
                    device_ids=device_ids, expected_generation=expected_generation)
        return self._handle("set_devices", options, providers.set_devices, cmd,
                            _provider(cmd.provider_uuid))

    def rename_provider(
        self,
        provider_uuid: str,
        name: str,
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Rename a provider (Placement's ``PUT /resource_providers/{uuid}``)."""
        cmd = parse(RenameProviderIn, provider_uuid=provider_uuid, name=name,
                    expected_generation=expected_generation)
        return self._handle("rename_provider", options, providers.rename, cmd,
                            _provider(cmd.provider_uuid))

    def set_parent(
        self,
        provider_uuid: str,
        parent_uuid: str | None,
        expected_generation: int,
        *,
        reparenting: bool = True,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Move a provider under ``parent_uuid``, or make it a root (``None``), with every
        provider below it (Placement's ``PUT /resource_providers/{uuid}`` with
        ``parent_provider_uuid``). ``reparenting=False`` allows only a root to take a parent
        (Placement before 1.37). A loop is refused; the generation stays, as Placement's."""
        cmd = parse(ParentIn, provider_uuid=provider_uuid, parent_uuid=parent_uuid,
                    expected_generation=expected_generation, reparenting=reparenting)
        return self._handle("set_parent", options, providers.set_parent, cmd,
                            _provider(cmd.provider_uuid))

    def delete_provider(
        self,
        provider_uuid: str,
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> None:
        """Delete a provider (refused while it has allocations or children)."""
        cmd = parse(DeleteProviderIn, provider_uuid=provider_uuid,
                    expected_generation=expected_generation)
        self._handle("delete_provider", options, providers.delete, cmd, lambda r: None)

    # -- custom resource classes ------------------------------------------------------------

    def create_resource_class(self, name: str, *, exist_ok: bool = False,
                              **options: Unpack[CommandOptions]) -> bool:
        """Create custom class ``name`` (``CUSTOM_*``); :class:`ResourceClassExists` when it
        exists, or, with ``exist_ok``, ``False`` with nothing written. ``True`` when it was
        created. A class deleted before is created again on the same stream."""
        cmd = parse(ResourceClassIn, name=name)
        return self._handle("ensure_resource_class" if exist_ok else "create_resource_class",
                            options, classes.ensure if exist_ok else classes.create, cmd,
                            _appended)

    def delete_resource_class(self, name: str, **options: Unpack[CommandOptions]) -> None:
        """Delete custom class ``name`` (:class:`ResourceClassNotFound` unless it exists).
        It does not look at inventories: the HTTP API refuses a class some inventory uses."""
        cmd = parse(ResourceClassIn, name=name)
        self._handle("delete_resource_class", options, classes.delete, cmd, lambda r: None)

    def rename_resource_class(self, name: str, new_name: str,
                              **options: Unpack[CommandOptions]) -> None:
        """Rename custom class ``name`` to ``new_name`` (Placement's ``PUT`` before 1.7):
        the old name is deleted and the new one created in one append. Inventories are not
        renamed: the HTTP API refuses to rename a class some inventory uses."""
        cmd = parse(ResourceClassIn, name=name, new_name=new_name)
        self._handle("rename_resource_class", options, classes.rename, cmd, lambda r: None)

    def resource_class_exists(self, name: str) -> bool:
        """True when custom class ``name`` was created and not deleted since."""
        found = guarded_read(lambda: self.store.get(resource_class_stream_id(name)))
        return isinstance(found, ResourceClass) and found.live

    def resource_classes(self) -> list[str]:
        """The custom classes created and not deleted, by name."""
        return guarded_read(lambda: catalog.resource_classes(self.store))

    # -- traits and aggregates --------------------------------------------------------------

    def create_trait(self, name: str, **options: Unpack[CommandOptions]) -> bool:
        """Create the custom trait ``name`` (``CUSTOM_[A-Z0-9_]+``, at most 255 characters),
        or create it again after its deletion; ``True`` when it was created, ``False`` when
        it existed already (nothing written)."""
        cmd = parse(TraitIn, name=name)
        return self._handle("create_trait", options, traits_handler.create_trait, cmd, _appended)

    def delete_trait(self, name: str, **options: Unpack[CommandOptions]) -> None:
        """Delete a custom trait: :class:`StandardTrait` for a standard one,
        :class:`TraitNotFound` for one that does not exist, :class:`TraitInUse` while a
        provider has it."""
        cmd = parse(TraitIn, name=name)
        self._handle("delete_trait", options, traits_handler.delete_trait, cmd, lambda r: None)

    def set_traits(
        self,
        provider_uuid: str,
        traits: Sequence[str],
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Replace a provider's traits (Placement's ``PUT .../traits``; an empty list is
        its ``DELETE``). Every trait must exist (:class:`UnknownTraits`); a stale
        generation is a :class:`ProviderGenerationConflict`. Advances the generation."""
        cmd = parse(ProviderTraitsIn, provider_uuid=provider_uuid, traits=traits,
                    expected_generation=expected_generation)
        return self._handle("set_traits", options, traits_handler.set_traits, cmd,
                            _provider(cmd.provider_uuid))

    def set_aggregates(
        self,
        provider_uuid: str,
        aggregates: Sequence[str],
        expected_generation: int | None,
        **options: Unpack[CommandOptions],
    ) -> ProviderView:
        """Replace the aggregates (UUIDs) a provider is in (Placement's ``PUT
        .../aggregates``). With an ``expected_generation`` (Placement 1.19 on) it is
        checked and advanced; ``None`` writes without either, as Placement before 1.19."""
        cmd = parse(ProviderAggregatesIn, provider_uuid=provider_uuid, aggregates=aggregates,
                    expected_generation=expected_generation)
        return self._handle("set_aggregates", options, traits_handler.set_aggregates, cmd,
                            _provider(cmd.provider_uuid))

    def trait_exists(self, name: str) -> bool:
        """True for a standard trait and for a custom trait that exists."""
        if not isinstance(name, str):
            raise InvalidRequest(f"a trait name is a string, got {name!r:.80}")
        if name in trait_rules.standard_traits():
            return True
        if not trait_rules.is_custom_name(name):
            return False
        found = guarded_read(lambda: self._reader().trait(name))
        return found is not None and found.exists

    def traits(self, *, name_in: Sequence[str] | None = None, prefix: str | None = None,
               associated: bool | None = None) -> list[str]:
        """Every trait that exists (standard and custom), sorted; only those in
        ``name_in``, starting with ``prefix``, and with ``associated`` those some provider
        has (``True``) or none has (``False``): Placement's ``GET /traits``."""
        query = parse(TraitsQueryIn, name_in=name_in, prefix=prefix, associated=associated)
        if query.name_in is not None:  # Nova's question: each named one looked up, no scan
            names = [n for n in dict.fromkeys(query.name_in) if self.trait_exists(n)]
        else:
            names = [*trait_rules.standard_traits(),
                     *guarded_read(lambda: catalog.custom_traits(self.store))]
        held: set[str] = set()
        if query.associated is not None:
            for found in guarded_read(lambda: catalog.provider_traits(self.store)).values():
                held.update(found)
        return trait_rules.select(names, name_in=query.name_in, prefix=query.prefix,
                                  associated=held, associated_wanted=query.associated)

    # -- moves ------------------------------------------------------------------------------
    # Each takes the generations it depends on and appends everything in one write; a
    # conflict at any step changes nothing.

    def swap(
        self,
        instance_uuid: str,
        migration_uuid: str,
        expected_generation: int,
        *,
        kind: str = RESIZE,
        destination: Mapping[str, Mapping[str, int]] | None = None,
        **options: Unpack[CommandOptions],
    ) -> MigrationView:
        """Start a resize, cold migration (``kind="migration"``) or live migration
        (``"live-migration"``): the instance's whole allocation and devices go to the new
        migration consumer ``migration_uuid`` and the context opens. The instance is left
        empty and then claims its destination with ``expected_generation=None``; or pass
        ``destination`` to claim it in the same write."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination=destination)
        return self._handle("swap", options, moves.swap, moves.Swap(cmd, kind),
                            _migration(cmd.migration_uuid), [cmd.migration_uuid],
                            inputs=(cmd, kind))

    def confirm(self, migration_uuid: str, expected_generation: int,
                **options: Unpack[CommandOptions]) -> MigrationView:
        """Confirm a move (or a live migration's success): the migration's source
        allocation and old devices are released; the context closes as confirmed."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    expected_generation=expected_generation)
        return self._handle("confirm", options, moves.confirm, cmd, _migration(cmd.migration_uuid))

    def revert(
        self,
        migration_uuid: str,
        expected_generation: int | None,
        instance_generation: int | None,
        **options: Unpack[CommandOptions],
    ) -> MigrationView:
        """Revert a move, roll back a failed live migration or a move that found no host:
        the instance's destination is released and its source allocation and old devices come
        back from the migration, in one write. ``instance_generation`` is ``None`` when the
        instance holds nothing (no destination was claimed)."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    expected_generation=expected_generation,
                    instance_generation=instance_generation)
        return self._handle("revert", options, moves.revert, cmd, _migration(cmd.migration_uuid))

    def force_live_migrate(
        self,
        instance_uuid: str,
        migration_uuid: str,
        destination_root: str,
        expected_generation: int,
        **options: Unpack[CommandOptions],
    ) -> MigrationView:
        """Live migrate to a named host without scheduling: swap, plus a blind copy of the
        allocation to ``destination_root``. Refused (:class:`NestedAllocationMove`, nothing
        written) when the allocation spans more than one provider."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination_root=destination_root)
        if cmd.destination_root is None:
            raise InvalidRequest("a forced live migration needs destination_root")
        return self._handle("force_live_migrate", options, moves.force_live_migrate, cmd,
                            _migration(cmd.migration_uuid), [cmd.migration_uuid])

    def evacuate(
        self,
        instance_uuid: str,
        migration_uuid: str,
        expected_generation: int,
        *,
        destination: Mapping[str, Mapping[str, int]] | None = None,
        destination_root: str | None = None,
        **options: Unpack[CommandOptions],
    ) -> MigrationView:
        """Evacuate from a failed host: the instance holds its source and ``destination``
        (scheduled) or a blind copy on ``destination_root`` (forced; refused for nested
        allocations) at once, until :meth:`complete_evacuation`."""
        cmd = parse(MoveIn, instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                    expected_generation=expected_generation, destination=destination,
                    destination_root=destination_root)
        return self._handle("evacuate", options, moves.evacuate, cmd,
                            _migration(cmd.migration_uuid),
                            [cmd.migration_uuid])

    def complete_evacuation(self, migration_uuid: str, instance_generation: int,
                            **options: Unpack[CommandOptions]) -> MigrationView:
        """The evacuated host was cleaned up: remove the instance's source share."""
        cmd = parse(ResolveIn, migration_uuid=migration_uuid,
                    instance_generation=instance_generation)
        return self._handle("complete_evacuation", options, moves.complete_evacuation, cmd,
                            _migration(cmd.migration_uuid))

    def _handle(self, name: str, options: CommandOptions, handler: Handler[C], cmd: C,
                outcome: Callable[[Reader], T], new_consumers: Iterable[str] = (), *,
                inputs: Iterable[Any] | None = None) -> T:
        """Apply command ``name`` exactly once (see :mod:`.command_ids`), its fingerprint
        taken of ``inputs`` (``cmd`` unless given)."""
        if not COMMAND_OPTIONS.issuperset(options):
            unknown = min(options.keys() - COMMAND_OPTIONS)
            raise TypeError(f"{name}() got an unexpected keyword argument {unknown!r}")
        it = intent(name, options.get("command_id"), options.get("request"),
                    *(inputs if inputs is not None else (cmd,)))
        return handle(self.store, self.policy, handler, cmd, it, outcome, new_consumers,
                      self.commits)

    # -- command ids ------------------------------------------------------------------------

    def command(self, command_id: CommandId) -> CommandView:
        """What became of command ``command_id``: applied or not, and if applied at which
        position and time, by whom, and which streams it left at which versions."""
        chosen = command_id_of(command_id)
        return guarded_read(lambda: lookup(self.store, chosen))

    # -- reads ------------------------------------------------------------------------------

    def consumer(self, consumer_uuid: str) -> ConsumerView:
        """A consumer's allocations, devices and generation (``None`` if it holds nothing)."""
        uuid = canonical_uuid(consumer_uuid)
        return guarded_read(lambda: _consumer(self._reader(), uuid))

    def provider(self, provider_uuid: str) -> ProviderView:
        """A provider's inventory, usage, devices and generation."""
        uuid = canonical_uuid(provider_uuid)
        return guarded_read(lambda: ProviderView.of(self._reader().provider(uuid)))

    def providers_many(self, provider_uuids: Iterable[str], *,
                       from_snapshots: bool = True) -> dict[str, ProviderView]:
        """Many live providers at once, by UUID (those absent or deleted left out), read in
        one query per thousand where the store has a query for many streams (PostgreSQL):
        what reading each with :meth:`provider` costs one round trip for. Those this
        process has cached are brought up to date in that query; each of the others is
        read from its last snapshot in a query of its own, or, with ``from_snapshots``
        false, whole in the shared query (for providers with short histories: just
        imported, say)."""
        wanted = [canonical_uuid(u) for u in provider_uuids]

        def views() -> dict[str, ProviderView]:
            found: dict[str, ProviderView] = {}
            for start in range(0, len(wanted), 1000):
                loaded = self.store.get_many(
                    (provider_stream_id(u) for u in wanted[start:start + 1000]),
                    from_snapshots=from_snapshots)
                found.update((p.uuid, ProviderView.of(p)) for p in loaded.values()
                             if isinstance(p, Provider) and not p.deleted)
            return found

        return guarded_read(views)

    def tree(self, root_uuid: str) -> dict[str, ProviderView]:
        """Every provider of a tree (the root and all below it), by UUID, root first and
        each child after its parent (depth first, siblings in UUID order)."""
        return guarded_read(lambda: self._tree(root_uuid))

    def _tree(self, root_uuid: str) -> dict[str, ProviderView]:
        reader = self._reader()
        found: dict[str, ProviderView] = {}
        pending = [canonical_uuid(root_uuid)]
        while pending:
            provider = reader.provider(pending.pop())
            found[provider.uuid] = ProviderView.of(provider)
            pending.extend(reversed(provider.children))
        return found

    def usages_in_tree(self, root_uuid: str) -> dict[str, dict[str, int]]:
        """Usage per provider and class across a whole tree."""
        return {uuid: view.usages for uuid, view in self.tree(root_uuid).items()}

    def migration(self, migration_uuid: str) -> MigrationView:
        """A migration's context and status."""
        uuid = canonical_uuid(migration_uuid)
        return guarded_read(lambda: MigrationView.of(self._reader().migration(uuid)))

    def migrations_in_flight(self, older_than_seconds: float = 0.0,
                             now: datetime | None = None) -> list[MigrationView]:
        """Migrations not yet resolved, oldest first, that started at least
        ``older_than_seconds`` ago (the leaks an operator looks for); ``now`` must carry a
        timezone. Finished migrations are known from their end events alone; only those in
        flight are loaded."""
        age = parse(AgeIn, older_than_seconds=older_than_seconds, now=now)
        now = age.now or datetime.now(UTC)

        def in_flight() -> list[MigrationView]:
            open_ids = [consumer_stream_id(u)
                        for u in catalog.migrations(self.store, in_flight_only=True)]
            return [MigrationView.of(found)
                    for found in self.store.get_many(open_ids).values()
                    if isinstance(found, Migration) and found.in_flight]

        views = guarded_read(in_flight)
        cutoff = started_by(now, age.older_than_seconds)
        return sorted((v for v in views if v.started_at <= cutoff), key=lambda v: v.started_at)

    def allocation_candidates(self, request: CandidatesRequest) -> Candidates:
        """Placement's ``GET /allocation_candidates`` for a parsed request, over the store
        as it stands now (see ``application/candidates.py``)."""
        return guarded_read(lambda: self.candidates_source.answer(request, self.trait_exists))

    def providers(self) -> dict[str, catalog.ProviderEntry]:
        """Every provider that exists (UUID, name, parent, root), in order of registration."""
        return catalog.providers(self.store)

    def consumers(self) -> dict[str, catalog.ConsumerEntry]:
        """Every consumer ever written (instances and migrations), in order of first write."""
        return catalog.consumers(self.store)

    def migration_ids(self) -> list[str]:
        """The UUIDs of every migration ever started, oldest first."""
        return catalog.migrations(self.store)


def _consumer(reader: Reader, consumer_uuid: str) -> ConsumerView:
    found = reader.consumer(consumer_uuid)
    moving = None
    if found is not None and found.migration_uuid is not None:
        moving = reader.migration(found.migration_uuid)
    return ConsumerView.of(consumer_uuid, found,
                           moving.uuid if moving is not None and moving.in_flight else None)


def _appended(reader: Reader) -> bool:
    """True when the command appended anything (released what was held, say)."""
    return reader.appended > 0


def _provider(provider_uuid: str) -> Callable[[Reader], ProviderView]:
    return lambda reader: ProviderView.of(reader.provider(provider_uuid))


def _migration(migration_uuid: str) -> Callable[[Reader], MigrationView]:
    return lambda reader: MigrationView.of(reader.migration(migration_uuid))
