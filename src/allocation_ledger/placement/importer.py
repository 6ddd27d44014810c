"""Writing a Placement database into a new ledger, and checking it afterwards.

One command per custom trait, one per provider (registration with its whole inventory;
parents before their children) and one for its traits and one for its aggregates where it
has any, and one claim per consumer that holds allocations, each an ordinary ledger
command with the actor, a request id shared by the whole import, and a reason that notes
the source's generation (the ledger's own generations start again at 1: they are stream
versions, opaque to clients, who re-read after the import as after any conflict).

The import is all or nothing: every command runs first in an in-memory staging ledger,
which is checked against the source and only then copied into the target in one append.
A provider over its capacity in Placement (an inventory lowered under what is allocated) is
registered with room for its allocations and given its real inventory after them, as the
ledger allows (DESIGN §2), and reported.

Placement records no migration context: a move in flight is a migration consumer holding
the instance's source while the instance holds its destination. Where
:mod:`.domain.move_pairing` pairs a migration consumer with its instance, the pair comes in
as the ledger's move (the instance claims the source, then the swap hands it to the
migration and claims the destination, kind ``migration``), so the move is listed, repaired
and audited like any other. A consumer of type ``MIGRATION`` that cannot be paired comes in
as a plain consumer of type ``PLACEMENT_MIGRATION`` holding the same allocation, and is
reported. A consumer without a type comes in as ``UNKNOWN``, as Placement reports it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from allocation_ledger.domain import move_pairing
from allocation_ledger.domain.consumer import MIGRATION
from allocation_ledger.domain.errors import LedgerNotEmpty
from allocation_ledger.domain.migration import COLD_MIGRATION, IN_PROGRESS
from allocation_ledger.placement.source import PlacementData, SourceConsumer, SourceProvider

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger
    from allocation_ledger.application.views import ProviderView

MIGRATION_TYPE = "PLACEMENT_MIGRATION"


@dataclass
class ImportReport:
    """What the import wrote (or would write), and what the check found."""

    dry_run: bool
    request_id: str
    providers: int = 0
    consumers: int = 0
    allocations: int = 0
    skipped_consumers: list[str] = field(default_factory=list)
    #: True once the import was copied into the ledger (nothing is, on a mismatch)
    written: bool = False
    #: providers over capacity in Placement, imported as they are
    over_capacity: list[str] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    #: moves in flight imported as the ledger's migrations: migration, instance, rule
    migrations: list[dict[str, str]] = field(default_factory=list)
    #: migration consumers imported as plain consumers, each with why it was not paired
    unpaired_migrations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the ledger matches the source (or nothing was written)."""
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {**asdict(self), "ok": self.ok}


def consumer_type(source: SourceConsumer, paired: frozenset[str] = frozenset()) -> str:
    """The ledger's consumer type for a Placement consumer (``paired``: the migration
    consumers imported as the ledger's migrations)."""
    if source.uuid in paired:
        return MIGRATION
    if source.type is None:
        return "UNKNOWN"
    return MIGRATION_TYPE if source.type == "MIGRATION" else source.type


def parents_first(providers: list[SourceProvider]) -> list[SourceProvider]:
    """Providers ordered so that every parent comes before its children."""
    by_uuid = {p.uuid: p for p in providers}

    def depth(p: SourceProvider) -> int:
        level, seen = 0, set()
        while p.parent_uuid and p.parent_uuid in by_uuid and p.uuid not in seen:
            seen.add(p.uuid)
            p, level = by_uuid[p.parent_uuid], level + 1
        return level

    return sorted(providers, key=depth)


def pairs(data: PlacementData, *, untyped: bool = False
          ) -> tuple[list[move_pairing.Pair], list[move_pairing.Unpaired]]:
    """The moves in flight ``data`` holds (see :mod:`.domain.move_pairing`)."""
    return move_pairing.pair([
        move_pairing.Seen(c.uuid, c.project_id, c.user_id, c.type,
                          data.allocations.get(c.uuid, {})) for c in data.consumers],
        untyped=untyped)


def import_placement(ledger: Ledger | None, data: PlacementData, *, dry_run: bool,
                     staging: Ledger, actor: str = "allocation-ledger import-placement",
                     progress: Callable[[int, int], None] | None = None,
                     pair_untyped: bool = False) -> ImportReport:
    """Write ``data`` into ``ledger`` (which must be empty), all or nothing, and check it.

    Every command runs first in ``staging`` (an empty in-memory ledger), where the ledger's
    rules are applied and the result is checked against the source; only a staging that
    matches the source is copied into ``ledger``, in one append: a refusal, a mismatch or
    a crash leaves ``ledger`` as empty as it was. With ``dry_run`` nothing is copied and
    ``ledger`` may be ``None``. A provider Placement holds over its capacity (an inventory
    lowered under its usage, which Placement allows) is imported as it is and reported.
    Moves in flight are imported as the ledger's migrations where their instance can be
    paired (``pair_untyped``: untyped consumers too), and reported where it cannot."""
    report = ImportReport(dry_run, f"placement-import-{uuid.uuid4()}")
    head = (ledger.store.recorder.max_notification_id() or 0) if ledger is not None else 0
    if not dry_run and head:
        raise LedgerNotEmpty(f"the ledger is not empty (it holds {head} events): import into "
                             "a new ledger (a new SQLite file or PostgreSQL schema)", head)
    moves, unpaired = pairs(data, untyped=pair_untyped)
    report.unpaired_migrations = [f"{u.migration_uuid}: {u.reason}" for u in unpaired]
    _stage(staging, data, report, actor, progress, moves)
    orphans = set(data.allocations) - {c.uuid for c in data.consumers}
    if orphans:
        report.mismatches.append(f"allocations of consumers Placement has no record of: "
                                 f"{', '.join(sorted(orphans))}")
    report.mismatches.extend(check(staging, data, moves))
    if dry_run or report.mismatches or ledger is None:
        return report  # nothing written
    stored = staging.store.recorder.select_notifications(
        1, staging.store.recorder.max_notification_id() or 1)
    ledger.store.append([staging.store.mapper.to_domain_event(n) for n in stored], [])
    report.written = True
    report.mismatches.extend(check(ledger, data, moves))
    return report


def _stage(staging: Ledger, data: PlacementData, report: ImportReport, actor: str,
           progress: Callable[[int, int], None] | None,
           moves: list[move_pairing.Pair]) -> None:
    """Run the import's commands in ``staging``: providers (parents first) with an
    inventory roomy enough for what Placement has allocated on them, the consumers' claims,
    the moves in flight, then the real inventory of the providers that needed room
    (lowering an inventory under its usage is allowed: the provider is then over capacity,
    as in Placement)."""
    total = len(data.providers) + len(data.consumers)
    done = 0
    usages, extremes = data.usages(), _extremes(data)
    tight: list[SourceProvider] = []
    for name in data.custom_traits:
        request = {"actor": actor, "request_id": report.request_id,
                   "reason": "imported from Placement: a custom trait"}
        report.commands.append({"command": "create_trait", "name": name,
                                "reason": request["reason"]})
        staging.create_trait(name, request=request)
    for p in parents_first(data.providers):
        inventories = data.inventories.get(p.uuid, {})
        roomy = {rc: room(inv, usages.get(p.uuid, {}).get(rc, 0),
                          extremes.get((p.uuid, rc), (1, 1, 0)))
                 for rc, inv in inventories.items()}
        request = {"actor": actor, "request_id": report.request_id,
                   "reason": f"imported from Placement: provider generation {p.generation}"}
        report.commands.append({"command": "register_provider", "provider_uuid": p.uuid,
                                "name": p.name, "parent_uuid": p.parent_uuid,
                                "inventories": inventories, "reason": request["reason"]})
        view = staging.register_provider(p.uuid, p.name, parent_uuid=p.parent_uuid,
                                         inventories=roomy or None, request=request)
        _stage_traits_and_aggregates(staging, data, report, p.uuid, view.generation, request)
        if roomy != inventories:
            tight.append(p)
        report.providers += 1
        done += 1
        if progress:
            progress(done, total)
    in_moves = {p.migration_uuid for p in moves} | {p.instance_uuid for p in moves}
    for c in data.consumers:
        allocations = data.allocations.get(c.uuid, {})
        done += 1
        if c.uuid in in_moves:
            continue  # staged with its move, below
        if not allocations:
            report.skipped_consumers.append(c.uuid)  # holds nothing: absent in the ledger
            continue
        kind = consumer_type(c)
        request = {"actor": actor, "request_id": report.request_id,
                   "reason": f"imported from Placement: consumer generation {c.generation}"
                             f", type {c.type or 'unknown'}"}
        report.commands.append({"command": "claim", "consumer_uuid": c.uuid,
                                "allocations": allocations, "project_id": c.project_id,
                                "user_id": c.user_id, "consumer_type": kind,
                                "reason": request["reason"]})
        staging.claim(c.uuid, allocations, None, project_id=c.project_id, user_id=c.user_id,
                      consumer_type=kind, request=request)
        report.consumers += 1
        report.allocations += sum(len(by) for by in allocations.values())
        if progress:
            progress(done, total)
    by_uuid = {c.uuid: c for c in data.consumers}
    for move in moves:
        _stage_move(staging, data, report, actor, by_uuid[move.migration_uuid],
                    by_uuid[move.instance_uuid], move.rule)
        if progress:  # its two consumers were counted in the loop above
            progress(done, total)
    for p in tight:
        request = {"actor": actor, "request_id": report.request_id,
                   "reason": "imported from Placement: its inventory, under what is allocated"}
        real = data.inventories[p.uuid]
        report.commands.append({"command": "set_inventories", "provider_uuid": p.uuid,
                                "inventories": real, "reason": request["reason"]})
        view = staging.set_inventories(p.uuid, real, staging.provider(p.uuid).generation,
                                       request=request)
        report.over_capacity += [
            f"provider {p.uuid} ({p.name}): {rc} used {c.used} of capacity {c.capacity}"
            for rc, c in sorted(view.classes.items()) if c.used > c.capacity]


def _stage_traits_and_aggregates(staging: Ledger, data: PlacementData, report: ImportReport,
                                 provider_uuid: str, generation: int,
                                 request: dict[str, str]) -> None:
    """A provider's traits and aggregates, each set in one command where it has any."""
    traits = data.traits.get(provider_uuid, [])
    if traits:
        report.commands.append({"command": "set_traits", "provider_uuid": provider_uuid,
                                "traits": traits, "reason": request["reason"]})
        generation = staging.set_traits(provider_uuid, traits, generation,
                                        request=request).generation
    aggregates = data.aggregates.get(provider_uuid, [])
    if aggregates:
        report.commands.append({"command": "set_aggregates", "provider_uuid": provider_uuid,
                                "aggregates": aggregates, "reason": request["reason"]})
        staging.set_aggregates(provider_uuid, aggregates, generation, request=request)


def _stage_move(staging: Ledger, data: PlacementData, report: ImportReport, actor: str,
                migration: SourceConsumer, instance: SourceConsumer, rule: str) -> None:
    """One move in flight: the instance claims what the migration holds (its source), then
    the swap hands that to the migration and claims the instance's destination."""
    source = data.allocations[migration.uuid]
    destination = data.allocations[instance.uuid]
    kind = consumer_type(instance)
    claimed = {"actor": actor, "request_id": report.request_id,
               "reason": f"imported from Placement: the source of instance {instance.uuid}'s "
                         f"move in flight, held by migration {migration.uuid} (consumer "
                         f"generation {migration.generation}, type "
                         f"{migration.type or 'unknown'}; paired by {rule})"}
    report.commands.append({"command": "claim", "consumer_uuid": instance.uuid,
                            "allocations": source, "project_id": instance.project_id,
                            "user_id": instance.user_id, "consumer_type": kind,
                            "reason": claimed["reason"]})
    view = staging.claim(instance.uuid, source, None, project_id=instance.project_id,
                         user_id=instance.user_id, consumer_type=kind, request=claimed)
    swapped = {"actor": actor, "request_id": report.request_id,
               "reason": f"imported from Placement: instance {instance.uuid} (consumer "
                         f"generation {instance.generation}, type {instance.type or 'unknown'})"
                         f" mid-move, its destination claimed; migration {migration.uuid} "
                         "holds its source"}
    report.commands.append({"command": "swap", "consumer_uuid": migration.uuid,
                            "instance_uuid": instance.uuid, "kind": COLD_MIGRATION,
                            "destination": destination, "reason": swapped["reason"]})
    staging.swap(instance.uuid, migration.uuid, view.generation or 0, kind=COLD_MIGRATION,
                 destination=destination, request=swapped)
    report.migrations.append({"migration_uuid": migration.uuid,
                              "instance_uuid": instance.uuid, "rule": rule})
    report.consumers += 2
    report.allocations += sum(len(by) for by in (*source.values(), *destination.values()))


def _extremes(data: PlacementData) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Per (provider, class): the smallest and the largest single allocation, and the
    greatest common divisor of them all."""
    found: dict[tuple[str, str], tuple[int, int, int]] = {}
    for by_provider in data.allocations.values():
        for rp, amounts in by_provider.items():
            for rc, amount in amounts.items():
                low, high, divisor = found.get((rp, rc), (amount, amount, 0))
                found[(rp, rc)] = (min(low, amount), max(high, amount),
                                   math.gcd(divisor, amount))
    return found


def room(inventory: dict[str, Any], used: int,
         extremes: tuple[int, int, int]) -> dict[str, Any]:
    """``inventory``, or one that holds ``used`` and single allocations from ``extremes[0]``
    to ``extremes[1]`` whose greatest common divisor is ``extremes[2]``, under the ledger's
    capacity and unit rules (DESIGN §2), as close to it as that allows: Placement lets an
    inventory be lowered (and its units tightened) under allocations that already exist,
    so a cloud can hold what a new claim may not."""
    roomy = dict(inventory)
    low, high, divisor = extremes
    ratio = float(roomy["allocation_ratio"])
    while int((roomy["total"] - roomy["reserved"]) * ratio) < used:
        roomy["total"] = max(roomy["total"] + 1, roomy["reserved"] + math.ceil(used / ratio))
    if high > roomy["max_unit"] or low < roomy["min_unit"]:
        roomy["max_unit"], roomy["min_unit"] = max(roomy["max_unit"], high), min(
            roomy["min_unit"], low)
    if divisor % roomy["step_size"]:
        roomy["step_size"] = 1
    return roomy


def check(ledger: Ledger, data: PlacementData,
          moves: list[move_pairing.Pair] | None = None) -> list[str]:
    """Every difference between the ledger and the source: inventories, usages, traits,
    aggregates, custom traits, consumers' allocations, projects, users and types, and each
    move's context."""
    found: list[str] = []
    paired = frozenset(p.migration_uuid for p in moves or [])
    for move in moves or []:
        moved = ledger.migration(move.migration_uuid)
        if (moved.instance_uuid, moved.status) != (move.instance_uuid, IN_PROGRESS):
            found.append(f"migration {move.migration_uuid}: instance {moved.instance_uuid}, "
                         f"{moved.status} in the ledger; instance {move.instance_uuid}, in "
                         "flight in Placement")
    custom = ledger.traits(prefix="CUSTOM_")
    if custom != data.custom_traits:
        found.append(f"custom traits {custom} in the ledger, {data.custom_traits} in Placement")
    usages = data.usages()
    # one query per thousand: the providers were just imported, their histories are short
    views = ledger.providers_many((p.uuid for p in data.providers), from_snapshots=False)
    for p in data.providers:
        view = views.get(p.uuid)
        if view is None:
            found.append(f"provider {p.uuid}: absent from the ledger, in Placement")
            continue
        found.extend(_provider_differences(view, p, data, usages))
    for c in data.consumers:
        wanted = data.allocations.get(c.uuid, {})
        held = ledger.consumer(c.uuid)
        if held.allocations != wanted:
            found.append(f"consumer {c.uuid}: allocations {held.allocations} in the ledger, "
                         f"{wanted} in Placement")
        elif wanted and (held.project_id, held.user_id, held.consumer_type) != (
                c.project_id, c.user_id, consumer_type(c, paired)):
            found.append(f"consumer {c.uuid}: owner {held.project_id}/{held.user_id}/"
                         f"{held.consumer_type} in the ledger, {c.project_id}/{c.user_id}/"
                         f"{consumer_type(c, paired)} in Placement")
    return found


def _provider_differences(view: ProviderView, p: SourceProvider, data: PlacementData,
                          usages: dict[str, dict[str, int]]) -> list[str]:
    """How the ledger's provider differs from Placement's: inventory, usage, traits,
    aggregates, name and parent."""
    found: list[str] = []
    mine = {rc: dict(asdict(i)) for rc, i in view.inventories.items()}
    theirs = {rc: dict(i) for rc, i in data.inventories.get(p.uuid, {}).items()}
    for inv in (*mine.values(), *theirs.values()):
        inv["allocation_ratio"] = float(inv["allocation_ratio"])
    if mine != theirs:
        found.append(f"provider {p.uuid}: inventory {mine} in the ledger, {theirs} in "
                     "Placement")
    used = {rc: n for rc, n in view.usages.items() if n}
    if used != usages.get(p.uuid, {}):
        found.append(f"provider {p.uuid}: usage {used} in the ledger, "
                     f"{usages.get(p.uuid, {})} in Placement")
    for what, held, wanted in (("traits", view.traits, data.traits.get(p.uuid, [])),
                               ("aggregates", view.aggregates,
                                data.aggregates.get(p.uuid, []))):
        if sorted(held) != sorted(wanted):
            found.append(f"provider {p.uuid}: {what} {sorted(held)} in the ledger, "
                         f"{sorted(wanted)} in Placement")
    if (view.name, view.parent_uuid) != (p.name, p.parent_uuid):
        found.append(f"provider {p.uuid}: name/parent {view.name}/{view.parent_uuid} in "
                     f"the ledger, {p.name}/{p.parent_uuid} in Placement")
    return found
