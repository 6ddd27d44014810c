"""Findings: what an audit reports, as frozen records rather than exceptions.

Like beancount's validation, an audit never stops at the first problem: every check returns
findings and the caller decides what to do with them (print them, count them, set an exit
code). A finding names where it was seen (the ledger position, the event's time and stream),
what it is about (``ids``), the numbers that disagree, and a sentence a person can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

ERROR = "error"
WARNING = "warning"

#: Kinds of finding (§5 of docs/guarantees.md names the invariants they stand for).
ORDER = "stream-order"  # a version gap, a repeated creation, an event without a stream
UNREADABLE = "unreadable-event"  # cannot be decoded or applied
USAGE_MISMATCH = "usage-mismatch"  # §5.1 provider usage != sum of allocations
OVER_CAPACITY = "over-capacity"  # §5.2 a write grew usage above capacity
NEGATIVE_USAGE = "negative-usage"
DOUBLE_HOLDER = "device-double-holder"  # §5.3 one device, several holders
HOLDER_MISMATCH = "device-holder-mismatch"  # §5.3 provider and consumer disagree on a holder
UNKNOWN_DEVICE = "unknown-device"
DEVICE_COUNT = "device-count-mismatch"  # §5.3 held devices != device-backed usage
RESOLVED_HOLDS = "resolved-migration-holds"  # §5.4
RESOLVED_TWICE = "migration-resolved-twice"
UNKNOWN_PROVIDER = "unknown-provider"  # an allocation on a provider never registered
INVALID_AMOUNT = "invalid-amount"
DELETED_IN_USE = "deleted-provider-in-use"
SNAPSHOT_DRIFT = "snapshot-drift"  # §5.5 a stored snapshot differs from the replay
PROJECTION_DRIFT = "projection-drift"  # §5.5 a read model differs from the replay
CHAIN_BROKEN = "chain-broken"  # a link does not follow: edit, insert, delete, reorder
CHAIN_MISSING = "chain-missing"  # an event stored without a chain hash
DIGEST_MISMATCH = "digest-mismatch"  # the history up to a digest is not the recorded one
DIGEST_MISSING = "digest-missing"  # the event at a digest is gone (truncated, deleted)
CHAIN_DOWNGRADED = "chain-downgraded"  # a keyed chain recomputed without the key
PROJECTION_AHEAD = "projection-ahead"  # a read model beyond the ledger, or of another one
INTEGRITY = "store-integrity"  # the database's own integrity check failed
STALE_MIGRATION = "stale-migration"  # in flight longer than the threshold (a warning)


@dataclass(frozen=True)
class Where:
    """A place in the ledger: position (notification id), the event's time and stream."""

    position: int
    time: datetime | None = None
    stream: UUID | None = None


@dataclass(frozen=True)
class Finding:
    """One thing an audit found wrong (``severity`` "error") or worth a look ("warning")."""

    kind: str
    position: int
    time: datetime | None
    stream: str | None
    message: str
    ids: dict[str, Any] = field(default_factory=dict)
    numbers: dict[str, int | float] = field(default_factory=dict)
    severity: str = ERROR

    @classmethod
    def at(
        cls,
        where: Where,
        kind: str,
        message: str,
        ids: dict[str, Any] | None = None,
        numbers: dict[str, int | float] | None = None,
        severity: str = ERROR,
    ) -> Finding:
        """A finding seen at ``where``."""
        return cls(kind, where.position, where.time,
                   str(where.stream) if where.stream is not None else None,
                   message, dict(ids or {}), dict(numbers or {}), severity)

    @property
    def identity(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What the finding is about (kind and ids), to tell a new problem from one that is
        still there."""
        return self.kind, tuple(sorted((k, str(v)) for k, v in self.ids.items()))

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return {
            "kind": self.kind, "severity": self.severity, "position": self.position,
            "time": self.time.isoformat() if self.time else None, "stream": self.stream,
            "ids": self.ids, "numbers": self.numbers, "message": self.message,
        }

    def line(self) -> str:
        """One readable line."""
        when = self.time.isoformat(timespec="seconds") if self.time else "-"
        return f"{self.severity.upper():7} #{self.position:<8} {when}  {self.kind}: {self.message}"
