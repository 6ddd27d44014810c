"""The audit as one call: replay, check, look for leaks and drift, report.

``audit(store)`` replays the whole ledger (or the part between two positions, building the
state before ``start`` without checking it) and returns an :class:`AuditReport`. A report
with any finding of severity "error" means the ledger broke an invariant of docs/guarantees.md §5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.audit import drift
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.chain import ChainCheck, Digest
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.integrity import (
    chain_before,
    chain_notes,
    chained,
    downgraded,
    store_integrity,
)
from allocation_ledger.audit.ledger_events import batches, last_position
from allocation_ledger.audit.pointintime import replay, reviver
from allocation_ledger.audit.replay import Auditor
from allocation_ledger.audit.snapshots import snapshot_checker
from allocation_ledger.audit.state import LedgerState
from allocation_ledger.domain.migration import check_age, started_by
from allocation_ledger.projections.reading import collector_paused

Progress = Callable[[int, int], None]
PROGRESS_EVERY = 2000


@dataclass(frozen=True)
class AuditReport:
    """What an audit looked at and what it found."""

    findings: list[Finding]
    events: int
    first_position: int
    last_position: int
    seconds: float  # replaying and checking (reading the read models excluded)
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        """Findings that break an invariant."""
        return [x for x in self.findings if x.severity == f.ERROR]

    @property
    def ok(self) -> bool:
        """True when no invariant is broken (warnings allowed)."""
        return not self.errors

    @property
    def events_per_second(self) -> float:
        """Replay throughput: events read, applied and checked per second."""
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "ok": self.ok, "events": self.events, "first_position": self.first_position,
            "last_position": self.last_position, "seconds": round(self.seconds, 3),
            "events_per_second": round(self.events_per_second),
            "errors": len(self.errors), "warnings": len(self.findings) - len(self.errors),
            "findings": [x.to_dict() for x in self.findings], "notes": self.notes,
        }


def audit(
    store: EventStore,
    *,
    start: int = 1,
    stop: int | None = None,
    stale_after: float | None = 3600.0,
    now: datetime | None = None,
    snapshots: bool = True,
    projections: bool | str = False,
    progress: Progress | None = None,
    digests: Sequence[Digest] = (),
    verify_chain: bool = True,
) -> AuditReport:
    """Replay and check the ledger from ``start`` to ``stop`` (inclusive).

    ``stale_after``: migrations in flight for longer (seconds) are reported as warnings.
    ``projections``: compare the read models (``True``: those beside the ledger; a URL:
    those in that store) with the replay, each at its own position.
    ``digests``: recorded heads the ledger must still have (see :mod:`.chain`). The hash
    chain is always checked (from the first event; a partial audit starts from the stored
    hash before ``start``), and so is the database's own integrity where it has a check;
    ``verify_chain=False`` leaves the chain out (only for measuring what it costs).
    """
    if stale_after is not None:
        check_age(stale_after)  # before the replay, not after it
    read, notes = (drift.load(store, projections if isinstance(projections, str)
                                   else None) if projections else (None, []))
    unbound = drift.unbound(store, read) if read is not None else []
    if unbound:  # another history's read models: comparing them says nothing more
        read, notes = None, [*notes, "projection drift not checked: the read models do not "
                             "belong to this ledger's history"]
    due = drift.Due(read) if read is not None else None
    began = time.perf_counter()  # the replay's own time, for its throughput
    # the drift check compares every consumer's generation: then keep every consumer
    every = bool(projections)
    # a partial audit starts from the stored hash before ``start``: a digest below it
    # cannot be compared (and its event is not missing)
    early = [d for d in digests if 0 < d.position < start]
    links = ChainCheck(chain_before(store, start), getattr(store.recorder, "chain_key", None),
                       [d for d in digests if d not in early]
                       ) if verify_chain and chained(store) else None
    with collector_paused():
        state = (replay(store, start - 1, every_consumer=every) if start > 1
                 else LedgerState(revive=None if every else reviver(store)))
        auditor = Auditor(state, snapshot_checker(store) if snapshots else None)
        _check(store, auditor, start, stop, due, progress, links)
    seconds = time.perf_counter() - began
    found = downgraded(store) + list(auditor.findings) + store_integrity(store) + unbound
    if links is not None:
        found += links.findings
        notes += [f"digest at #{d.position} not checked: beyond the audited range"
                  for d in links.unchecked()]
        notes += [f"digest at #{d.position} not checked: before the audited range"
                  for d in dict.fromkeys(early)]
    else:
        notes.append("hash chain not checked" + ("" if verify_chain else " (asked not to)"))
    notes += chain_notes(store)
    if due is not None:
        found += due.findings
        notes += due.notes
    if stale_after is not None:
        found += stale_migrations(auditor.state, stale_after, now)
    found.sort(key=lambda x: x.position)  # stable: each position keeps its own order
    return AuditReport(found, auditor.events, start, auditor.state.position, seconds, notes)


def _check(store: EventStore, auditor: Auditor, start: int, stop: int | None,
           due: drift.Due | None, progress: Progress | None,
           links: ChainCheck | None) -> None:
    """Feed the auditor every event from ``start`` to ``stop``, a batch of notifications
    at a time, after checking the batch's chain; compare each read model when the replay
    reaches its position, and tell the progress every :data:`PROGRESS_EVERY` events."""
    end = stop if stop is not None else last_position(store)
    decoder = Decoder(store.mapper)
    for batch in batches(store, start, stop):
        if links is not None:
            links.observe_all(batch)
        if due is None and progress is None:
            auditor.observe_all(batch, decoder)
            continue
        first = 0
        while first < len(batch):  # up to the next comparison or progress, in one go
            last = len(batch)
            if due is not None:
                due.before(batch[first].id, auditor.state)
                last = min(last, due.reached(batch, first))
            if progress is not None:
                last = min(last, first + PROGRESS_EVERY - auditor.events % PROGRESS_EVERY)
            auditor.observe_all(batch[first:last], decoder)
            if progress is not None and auditor.events % PROGRESS_EVERY == 0:
                progress(batch[last - 1].id, end)
            first = last
    auditor.finish()
    if links is not None and stop is None:
        links.finish()
    if due is not None:
        due.finish(auditor.state, whole=stop is None)
    if progress is not None:
        progress(end, end)


def stale_migrations(state: LedgerState, older_than: float,
                     now: datetime | None = None) -> list[Finding]:
    """Migrations still in flight that started more than ``older_than`` seconds ago: the
    allocations Nova leaks when a move is never confirmed or reverted."""
    now = now or datetime.now(UTC)
    found: list[Finding] = []
    cutoff = started_by(now, older_than)
    for migration in sorted(state.migrations(), key=lambda m: m.started_at):
        age = (now - migration.started_at).total_seconds()
        if migration.in_flight and migration.started_at <= cutoff:
            where = Where(state.created_at.get(migration.id, 0), migration.started_at,
                          migration.id)
            found.append(Finding.at(
                where, f.STALE_MIGRATION,
                f"{migration.kind} {migration.uuid} of instance {migration.instance_uuid} has "
                f"been in flight for {age / 3600:.1f} h", {
                    "migration_uuid": migration.uuid, "instance_uuid": migration.instance_uuid,
                    "kind": migration.kind},
                {"age_seconds": round(age), "held": sum(
                    sum(r.values()) for r in migration.allocations.values())},
                severity=f.WARNING))
    return found
