"""Nova's own moves, told apart from plain allocation writes.

Nova moves an instance's allocations with Placement's plain writes (``move_allocations`` in
``nova/scheduler/client/report.py``, at microversion 1.28): one ``POST /allocations`` that
empties the instance at its generation and gives a new consumer, the migration record's
UUID, exactly what the instance held (``consumer_generation: null``); the reverse ``POST``
(the migration emptied, the instance holding the source again) to revert; emptying the
migration consumer (``PUT /allocations/{migration}`` with no allocations at its generation,
or ``DELETE``) to confirm. :func:`recognise` says which of the ledger's move commands such a
write is, from the write and the state of the consumers it names, or ``None`` for a plain
write. The rule, exactly:

- **swap**: two entries; consumer *I* emptied with a generation; consumer *M* given
  allocations with generation ``null``; *I* holds allocations, is not a migration record
  and has no move in flight; *M* was never written; *M*'s allocations, project and user are
  exactly *I*'s; no ``consumer_type`` sent says otherwise (*M*'s, when sent, is
  ``MIGRATION``; *I*'s is not). The move's kind is ``migration`` (a cold migration): Nova's
  write does not say whether it is a resize, a cold or a live migration; the ledger checks
  a cold migration exactly as a resize, and leaves out only the live migration's own rule
  (its destination on another host), which Nova's scheduler keeps itself.
- **revert**: two entries; consumer *M* emptied with a generation, *I* given allocations;
  *M* is a migration record of a swap kind in flight that holds allocations, *I* is its
  instance, and *I*'s new allocations, project and user are exactly what *M* holds (its
  source); *I*'s ``consumer_type``, when sent, is not ``MIGRATION``.
- **confirm**: one entry emptying *M*, a migration record of a swap kind in flight that
  holds allocations, whose instance has claimed a destination. Without a destination the
  emptying is the release of a leaked migration (**abort**), as a release of a migration
  consumer is everywhere in the ledger.

Each generation the write sends goes to the command unchanged, so the command's own checks
(in the one atomic append) refuse a stale one as Placement would; the rule reads no
generation itself (a ``DELETE`` sends none: its confirm takes the migration's current one,
as Placement's ``DELETE`` checks none). Anything else is a plain write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from allocation_ledger.domain.consumer import MIGRATION
from allocation_ledger.domain.migration import COLD_MIGRATION
from allocation_ledger.domain.moves import SWAP_KINDS
from allocation_ledger.domain.values import Allocations

#: the kind a recognised swap opens
NOVA_SWAP_KIND = COLD_MIGRATION


@dataclass(frozen=True)
class Entry:
    """One consumer's part of a write, as the client sent it (allocations already
    validated; ``consumer_type`` ``None`` when not sent)."""

    consumer_uuid: str
    allocations: Allocations
    expected_generation: int | None
    project_id: str
    user_id: str
    consumer_type: str | None = None


@dataclass(frozen=True)
class Move:
    """The move a migration record carries: its instance, kind and where it stands."""

    instance_uuid: str
    kind: str
    in_flight: bool
    destination_claimed: bool


@dataclass(frozen=True)
class Held:
    """A consumer the write names, as it stands: ``written`` is False for a consumer that
    never held anything; ``generation`` is ``None`` while it holds nothing; ``moving`` is
    True for an instance with a move in flight; ``move`` is set for a migration record."""

    consumer_uuid: str
    written: bool
    generation: int | None
    allocations: Allocations
    project_id: str | None = None
    user_id: str | None = None
    moving: bool = False
    move: Move | None = None


@dataclass(frozen=True)
class Swap:
    """Start a move: the instance's allocations go to the new migration record."""

    instance_uuid: str
    migration_uuid: str
    instance_generation: int
    kind: str = NOVA_SWAP_KIND


@dataclass(frozen=True)
class Revert:
    """Undo a move: the migration's source goes back to the instance."""

    migration_uuid: str
    migration_generation: int | None
    instance_generation: int | None


@dataclass(frozen=True)
class Confirm:
    """Finish a move: the migration's source is released."""

    migration_uuid: str
    migration_generation: int


@dataclass(frozen=True)
class Abort:
    """Release a migration that has no destination (a leaked move)."""

    migration_uuid: str
    migration_generation: int


NovaMove = Swap | Revert | Confirm | Abort


def named(entries: Sequence[Entry]) -> tuple[str, ...]:
    """The consumers whose state :func:`recognise` needs, in the write's order; none when
    the write's shape alone rules out a move (so a plain write reads nothing for it)."""
    if len(entries) == 1 and _emptied(entries[0]):
        return (entries[0].consumer_uuid,)
    if len(entries) == 2:
        emptied = [e for e in entries if _emptied(e)]
        given = [e for e in entries if e.allocations]
        if len(emptied) == 1 and len(given) == 1:
            return (emptied[0].consumer_uuid, given[0].consumer_uuid)
    return ()


def recognise(entries: Sequence[Entry], held: Mapping[str, Held]) -> NovaMove | None:
    """The move command this write is (see the module's rule), or ``None``: a plain write.
    ``held`` has every consumer :func:`named` returns."""
    ids = named(entries)
    by_id = {e.consumer_uuid: e for e in entries}
    if len(ids) == 1:
        return _emptying(by_id[ids[0]], held[ids[0]])
    if len(ids) == 2:
        source, target = by_id[ids[0]], by_id[ids[1]]
        return (_swap(source, target, held[ids[0]], held[ids[1]])
                or _revert(source, target, held[ids[0]]))
    return None


def recognise_delete(migration: Held) -> NovaMove | None:
    """``DELETE /allocations/{uuid}`` of ``migration``: its confirm at its current
    generation (a ``DELETE`` sends none) when it is a move in flight with a destination
    claimed; ``None`` otherwise (a release, which aborts a migration with no destination)."""
    move, generation = migration.move, migration.generation
    if _in_flight(migration) and move is not None and move.destination_claimed \
            and generation is not None:
        return Confirm(migration.consumer_uuid, generation)
    return None


def _emptied(entry: Entry) -> bool:
    return not entry.allocations and entry.expected_generation is not None


def _in_flight(held: Held) -> bool:
    move = held.move
    return (move is not None and move.in_flight and move.kind in SWAP_KINDS
            and bool(held.allocations))


def _same_owner(entry: Entry, held: Held) -> bool:
    return (entry.project_id, entry.user_id) == (held.project_id, held.user_id)


def _emptying(entry: Entry, migration: Held) -> NovaMove | None:
    generation = entry.expected_generation
    if not _in_flight(migration) or migration.move is None or generation is None:
        return None
    if migration.move.destination_claimed:
        return Confirm(entry.consumer_uuid, generation)
    return Abort(entry.consumer_uuid, generation)


def _swap(source: Entry, target: Entry, instance: Held, migration: Held) -> Swap | None:
    if (instance.move is not None or instance.moving or not instance.allocations
            or source.consumer_type == MIGRATION
            or target.consumer_type not in (None, MIGRATION)):
        return None
    generation = source.expected_generation
    if migration.written or target.expected_generation is not None or generation is None:
        return None
    if target.allocations != instance.allocations or not _same_owner(target, instance):
        return None
    return Swap(source.consumer_uuid, target.consumer_uuid, generation)


def _revert(source: Entry, target: Entry, migration: Held) -> Revert | None:
    move = migration.move
    if not _in_flight(migration) or move is None or move.instance_uuid != target.consumer_uuid:
        return None
    if target.consumer_type == MIGRATION or target.allocations != migration.allocations:
        return None
    if not _same_owner(target, migration):
        return None
    return Revert(source.consumer_uuid, source.expected_generation, target.expected_generation)
