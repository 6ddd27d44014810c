"""The service API: :class:`Ledger`.

Every command validates its input (pydantic), loads the streams it needs, lets the domain
decide, and appends everything it changed in one atomic write. A rejected command raises a
:class:`~allocation_ledger.domain.errors.LedgerError` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application import catalog, moving, providing
from allocation_ledger.application.commands import (
    CommandId,
    Reader,
    guarded_read,
    intent,
)
from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.inputs import (
    AgeIn,
    ClaimIn,
    ConsumerWriteIn,
    ReleaseIn,
    WritesIn,
    canonical_uuid,
    parse,
)
from allocation_ledger.application.lookup import CommandView, lookup
from allocation_ledger.application.readside import ReadSide
from allocation_ledger.application.session import Session
from allocation_ledger.application.views import ConsumerView, MigrationView, ProviderView
from allocation_ledger.domain import claims
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.ids import consumer_stream_id
from allocation_ledger.domain.migration import Migration


class Ledger(providing.ProviderCommands, moving.MoveCommands):
    """The allocation ledger's service API over one event store.

    Open one with :func:`allocation_ledger.open_ledger`. Commands take the generations
    they depend on (``None`` for a consumer that holds nothing) and an optional ``request``
    mapping with ``actor``, ``request_id`` and ``reason``, stored with every event.
    Safe to share between threads; many processes may write to one PostgreSQL store.
    """

    def __init__(self, store: EventStore, *, group_commit: bool = False) -> None:
        self.store = store
        self.commits = GroupCommit(store, enabled=group_commit)
        self.read_side: ReadSide | None = None

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
        consumer_type: str = "INSTANCE",
        devices: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> ConsumerView:
        """Give one consumer these allocations (provider -> class -> amount), replacing what it
        held. ``expected_generation`` is ``None`` for a new or emptied consumer, else its
        current generation. Device-backed classes take free devices, lowest id first, unless
        ``devices`` (provider -> class -> ids) names them. Returns the consumer afterwards.

        Every command takes an optional ``command_id`` (a string or UUID the caller
        chooses): a command is applied at most once per id, and a retry with the same id
        returns the first call's outcome with ``replayed`` set (see :mod:`.commands`).
        """
        cmd = parse(ClaimIn, consumer_uuid=consumer_uuid, allocations=allocations,
                    expected_generation=expected_generation, project_id=project_id,
                    user_id=user_id, consumer_type=consumer_type, devices=devices or {})
        it = intent("claim", command_id, request, cmd)
        new = [cmd.consumer_uuid] if cmd.expected_generation is None else []
        return self._apply(it,
                           lambda s: claims.write(s, [_write(cmd)], it.meta),
                           lambda r: _view(r, cmd.consumer_uuid), new)

    def write_allocations(
        self,
        writes: Sequence[Mapping[str, Any]],
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> list[ConsumerView]:
        """Replace the allocations of several consumers in one atomic write (Placement's
        ``POST /allocations``). Each item has ``consumer_uuid``, ``allocations`` (empty to
        release), ``expected_generation``, ``project_id``, ``user_id`` and optionally
        ``consumer_type`` and ``devices``. All succeed or none does.
        """
        if isinstance(writes, Sequence) and not isinstance(writes, str) and not writes:
            raise InvalidRequest("a write needs at least one consumer")
        cmds = parse(WritesIn, writes=writes).writes
        it = intent("write_allocations", command_id, request, *cmds)

        def decide(s: Session) -> None:
            s.prefetch_consumers([c.consumer_uuid for c in cmds])
            claims.write(s, [_write(c) for c in cmds], it.meta)

        new = [c.consumer_uuid for c in cmds if c.expected_generation is None]
        return self._apply(it, decide,
                           lambda r: [_view(r, c.consumer_uuid) for c in cmds], new)

    def release(
        self,
        consumer_uuid: str,
        expected_generation: int | None,
        *,
        request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> bool:
        """Remove a consumer's allocations and devices, checking its generation; ``False``,
        with nothing written, for a consumer that holds nothing (``expected_generation``
        ``None``). An instance mid-move gives up only its destination: the migration keeps
        the source, open for a new destination claim or a revert. Mid-evacuation, or for a
        migration consumer, the move is aborted. Returns ``True`` when something was
        released."""
        cmd = parse(ReleaseIn, consumer_uuid=consumer_uuid,
                    expected_generation=expected_generation)
        it = intent("release", command_id, request, cmd)
        return self._apply(it, lambda s: claims.release(
            s, cmd.consumer_uuid, cmd.expected_generation, it.meta), lambda r: r.appended > 0)

    def force_release(
        self, consumer_uuid: str, *, request: Mapping[str, str] | None = None,
        command_id: CommandId | None = None,
    ) -> bool:
        """Release ignoring the generation; ``False`` (a no-op) if it held nothing. An
        instance mid-move is being deleted: its migration's allocations are released too
        and the move is aborted."""
        cmd = parse(ReleaseIn, consumer_uuid=consumer_uuid, expected_generation=None)
        it = intent("force_release", command_id, request, cmd)
        return self._apply(it, lambda s: claims.release(
            s, cmd.consumer_uuid, None, it.meta, forced=True), lambda r: r.appended > 0)

    # -- command ids ------------------------------------------------------------------------

    def command(self, command_id: CommandId) -> CommandView:
        """What became of command ``command_id``: applied or not, and if applied at which
        position and time, by whom, and which streams it left at which versions."""
        return guarded_read(lambda: lookup(self.store, command_id))

    # -- reads ------------------------------------------------------------------------------

    def consumer(self, consumer_uuid: str) -> ConsumerView:
        """A consumer's allocations, devices and generation (``None`` if it holds nothing)."""
        uuid = canonical_uuid(consumer_uuid)
        return guarded_read(lambda: _view(Session(self.store), uuid))

    def provider(self, provider_uuid: str) -> ProviderView:
        """A provider's inventory, usage, devices and generation."""
        uuid = canonical_uuid(provider_uuid)
        return guarded_read(lambda: ProviderView.of(Session(self.store).provider(uuid)))

    def tree(self, root_uuid: str) -> dict[str, ProviderView]:
        """Every provider of a tree (the root and all below it), by UUID, root first and
        each child after its parent (depth first, siblings in UUID order)."""
        return guarded_read(lambda: self._tree(root_uuid))

    def _tree(self, root_uuid: str) -> dict[str, ProviderView]:
        session = Session(self.store)
        found: dict[str, ProviderView] = {}
        pending = [canonical_uuid(root_uuid)]
        while pending:
            provider = session.provider(pending.pop())
            found[provider.uuid] = ProviderView.of(provider)
            pending.extend(reversed(provider.children))
        return found

    def tree_usages(self, root_uuid: str) -> dict[str, dict[str, int]]:
        """Usage per provider and class across a whole tree."""
        return {uuid: view.usages for uuid, view in self.tree(root_uuid).items()}

    def migration(self, migration_uuid: str) -> MigrationView:
        """A migration's context and status."""
        uuid = canonical_uuid(migration_uuid)
        return guarded_read(lambda: MigrationView.of(Session(self.store).migration(uuid)))

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
                    for found in self.store.get_short_many(open_ids).values()
                    if isinstance(found, Migration) and found.status == "in-progress"]

        views = guarded_read(in_flight)
        return sorted((v for v in views if v.age_seconds(now) >= age.older_than_seconds),
                      key=lambda v: v.started_at)

    def providers(self) -> dict[str, catalog.ProviderEntry]:
        """Every provider that exists (UUID, name, parent, root), in order of registration."""
        return catalog.providers(self.store)

    def consumers(self) -> dict[str, catalog.ConsumerEntry]:
        """Every consumer ever written (instances and migrations), in order of first write."""
        return catalog.consumers(self.store)

    def migration_ids(self) -> list[str]:
        """The UUIDs of every migration ever started, oldest first."""
        return catalog.migrations(self.store)


def _view(reader: Reader, consumer_uuid: str) -> ConsumerView:
    found = reader.consumer(consumer_uuid)
    moving = None
    if found is not None and found.migration_uuid is not None:
        moving = reader.migration(found.migration_uuid)
    return ConsumerView.of(consumer_uuid, found,
                           moving.uuid if moving is not None and moving.in_flight else None)


def _write(cmd: ConsumerWriteIn) -> claims.ConsumerWrite:
    return claims.ConsumerWrite(
        consumer_uuid=cmd.consumer_uuid,
        allocations={rp: dict(r) for rp, r in cmd.allocations.items()},
        expected_generation=cmd.expected_generation,
        project_id=cmd.project_id,
        user_id=cmd.user_id,
        consumer_type=cmd.consumer_type,
        devices={rp: {rc: list(ids) for rc, ids in by.items()}
                 for rp, by in cmd.devices.items()},
    )
