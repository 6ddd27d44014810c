"""Writing a Placement database into a new ledger, and checking it afterwards.

One command per provider (registration with its whole inventory; parents before their
children) and one claim per consumer that holds allocations, each an ordinary ledger
command with the actor, a request id shared by the whole import, and a reason that notes
the source's generation (the ledger's own generations start again at 1: they are stream
versions, opaque to clients, who re-read after the import as after any conflict).

The import is all or nothing: every command runs first in an in-memory staging ledger,
which is checked against the source and only then copied into the target in one append.
A provider over its capacity in Placement (an inventory lowered under what is allocated) is
registered with room for its allocations and given its real inventory after them, as the
ledger allows (DESIGN §2), and reported.

Placement records no migration context: a consumer of type ``MIGRATION`` (Nova's
migration-based allocation) does not say which instance is moving, so it comes in as a
plain consumer of type ``PLACEMENT_MIGRATION`` holding the same allocation, released like
any consumer once Nova finishes the move. A consumer without a type comes in as
``UNKNOWN``, as Placement reports it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from allocation_ledger.domain.errors import LedgerNotEmpty
from allocation_ledger.placement.source import PlacementData, SourceConsumer, SourceProvider

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger

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

    @property
    def ok(self) -> bool:
        """True when the ledger matches the source (or nothing was written)."""
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {**asdict(self), "ok": self.ok}


def consumer_type(source: SourceConsumer) -> str:
    """The ledger's consumer type for a Placement consumer."""
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


def import_placement(ledger: Ledger | None, data: PlacementData, *, dry_run: bool,
                     staging: Ledger, actor: str = "allocation-ledger import-placement",
                     progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Write ``data`` into ``ledger`` (which must be empty), all or nothing, and check it.

    Every command runs first in ``staging`` (an empty in-memory ledger), where the ledger's
    rules are applied and the result is checked against the source; only a staging that
    matches the source is copied into ``ledger``, in one append: a refusal, a mismatch or
    a crash leaves ``ledger`` as empty as it was. With ``dry_run`` nothing is copied and
    ``ledger`` may be ``None``. A provider Placement holds over its capacity (an inventory
    lowered under its usage, which Placement allows) is imported as it is and reported."""
    report = ImportReport(dry_run, f"placement-import-{uuid.uuid4()}")
    head = (ledger.store.recorder.max_notification_id() or 0) if ledger is not None else 0
    if not dry_run and head:
        raise LedgerNotEmpty(f"the ledger is not empty (it holds {head} events): import into "
                             "a new ledger (a new SQLite file or PostgreSQL schema)", head)
    _stage(staging, data, report, actor, progress)
    orphans = set(data.allocations) - {c.uuid for c in data.consumers}
    if orphans:
        report.mismatches.append(f"allocations of consumers Placement has no record of: "
                                 f"{', '.join(sorted(orphans))}")
    report.mismatches.extend(check(staging, data))
    if dry_run or report.mismatches or ledger is None:
        return report  # nothing written
    stored = staging.store.recorder.select_notifications(
        1, staging.store.recorder.max_notification_id() or 1)
    ledger.store.append([staging.store.mapper.to_domain_event(n) for n in stored], [])
    report.written = True
    report.mismatches.extend(check(ledger, data))
    return report


def _stage(staging: Ledger, data: PlacementData, report: ImportReport, actor: str,
           progress: Callable[[int, int], None] | None) -> None:
    """Run the import's commands in ``staging``: providers (parents first) with an
    inventory roomy enough for what Placement has allocated on them, the consumers' claims,
    then the real inventory of the providers that needed room (lowering an inventory
    under its usage is allowed: the provider is then over capacity, as in Placement)."""
    total = len(data.providers) + len(data.consumers)
    done = 0
    usages, extremes = data.usages(), _extremes(data)
    tight: list[SourceProvider] = []
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
        staging.register_provider(p.uuid, p.name, parent_uuid=p.parent_uuid,
                                  inventories=roomy or None, request=request)
        if roomy != inventories:
            tight.append(p)
        report.providers += 1
        done += 1
        if progress:
            progress(done, total)
    for c in data.consumers:
        allocations = data.allocations.get(c.uuid, {})
        done += 1
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


def check(ledger: Ledger, data: PlacementData) -> list[str]:
    """Every difference between the ledger and the source: inventories, usages,
    consumers' allocations, projects, users and types."""
    found: list[str] = []
    usages = data.usages()
    for p in data.providers:
        view = ledger.provider(p.uuid)
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
        if (view.name, view.parent_uuid) != (p.name, p.parent_uuid):
            found.append(f"provider {p.uuid}: name/parent {view.name}/{view.parent_uuid} in "
                         f"the ledger, {p.name}/{p.parent_uuid} in Placement")
    for c in data.consumers:
        wanted = data.allocations.get(c.uuid, {})
        held = ledger.consumer(c.uuid)
        if held.allocations != wanted:
            found.append(f"consumer {c.uuid}: allocations {held.allocations} in the ledger, "
                         f"{wanted} in Placement")
        elif wanted and (held.project_id, held.user_id, held.consumer_type) != (
                c.project_id, c.user_id, consumer_type(c)):
            found.append(f"consumer {c.uuid}: owner {held.project_id}/{held.user_id}/"
                         f"{held.consumer_type} in the ledger, {c.project_id}/{c.user_id}/"
                         f"{consumer_type(c)} in Placement")
    return found
