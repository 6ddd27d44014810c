"""Which imported consumers are a move in flight, and whose: pairing a migration consumer
with its instance from what a Placement database holds.

Placement records no migration context: Nova's move (``move_allocations``) leaves a
migration consumer holding the instance's source allocation and the instance holding its
destination claim, both of the same project and user. Placement deletes a consumer its last
allocation leaves (``delete_consumers_if_no_allocations``), so the instance, emptied by
the move, comes back as a new consumer when it claims its destination: its record is
younger than the migration's. The rule, on consumers in the order Placement created them:

- A consumer of type ``MIGRATION`` that holds allocations is paired with the one consumer
  created after it, of the same project and user, not of type ``MIGRATION``, that holds
  allocations. None, or more than one, or one that another migration claims too: it stays
  unpaired, with the reason.
- With ``untyped`` (Nova writes no consumer type: its moves are untyped on both sides), an
  untyped consumer holding allocations is paired with an untyped one of the same project
  and user created after it, when each is the other's only candidate and neither could be
  the instance of a typed migration. Placement cannot tell that shape from a user's two
  instances, which is why it is asked for, never assumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from allocation_ledger.domain.values import Allocations

PLACEMENT_MIGRATION = "MIGRATION"  # Placement's consumer type of a migration
TYPED = "consumer type MIGRATION"
UNTYPED = "untyped consumers of the same project and user (--pair-untyped)"


@dataclass(frozen=True)
class Seen:
    """A consumer as the source holds it (``type`` ``None``: none recorded)."""

    uuid: str
    project_id: str
    user_id: str
    type: str | None
    allocations: Allocations


@dataclass(frozen=True)
class Pair:
    """A move in flight: ``migration_uuid`` holds its source, ``instance_uuid`` its
    destination; ``rule`` says which part of the rule paired them."""

    migration_uuid: str
    instance_uuid: str
    rule: str


@dataclass(frozen=True)
class Unpaired:
    """A migration consumer whose instance could not be told."""

    migration_uuid: str
    reason: str


def pair(consumers: Sequence[Seen], *, untyped: bool = False
         ) -> tuple[list[Pair], list[Unpaired]]:
    """The moves ``consumers`` (in the order their source created them) hold, and the
    migration consumers left unpaired (see the module's rule)."""
    order = {c.uuid: n for n, c in enumerate(consumers)}

    def later_of_owner(m: Seen, fits: bool | None = None) -> list[Seen]:
        return [c for c in consumers[order[m.uuid] + 1:]
                if c.allocations and (c.project_id, c.user_id) == (m.project_id, m.user_id)
                and (c.type != PLACEMENT_MIGRATION if fits is None else c.type is None)]

    pairs: list[Pair] = []
    unpaired: list[Unpaired] = []
    wanted: dict[str, list[str]] = {}
    candidates: set[str] = set()  # every instance a typed migration could be of
    typed = [c for c in consumers if c.type == PLACEMENT_MIGRATION and c.allocations]
    for m in typed:
        found = later_of_owner(m)
        candidates.update(c.uuid for c in found)
        if len(found) == 1:
            wanted.setdefault(found[0].uuid, []).append(m.uuid)
        elif not found:
            unpaired.append(Unpaired(m.uuid, (
                f"no consumer of project {m.project_id}, user {m.user_id} created after it "
                "holds allocations (its instance has not claimed a destination)")))
        else:
            unpaired.append(Unpaired(m.uuid, (
                f"{len(found)} consumers of project {m.project_id}, user {m.user_id} could be "
                f"its instance: {', '.join(c.uuid for c in found)}")))
    for instance, migrations in wanted.items():
        if len(migrations) == 1:
            pairs.append(Pair(migrations[0], instance, TYPED))
        else:
            unpaired += [Unpaired(m, f"instance {instance} is the only candidate of "
                                     f"{len(migrations)} migrations: {', '.join(migrations)}")
                         for m in migrations]
    if untyped:
        taken = candidates
        loose = [c for c in consumers
                 if c.type is None and c.allocations and c.uuid not in taken]
        after = {m.uuid: [c for c in later_of_owner(m, False) if c.uuid not in taken]
                 for m in loose}
        before: dict[str, list[str]] = {}
        for m_uuid, found in after.items():
            for c in found:
                before.setdefault(c.uuid, []).append(m_uuid)
        for m in loose:
            found = after[m.uuid]
            if len(found) == 1 and before[found[0].uuid] == [m.uuid] \
                    and not before.get(m.uuid) and not after[found[0].uuid]:
                pairs.append(Pair(m.uuid, found[0].uuid, UNTYPED))
    return sorted(pairs, key=lambda p: order[p.migration_uuid]), unpaired
