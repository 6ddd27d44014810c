"""§5.5 for snapshots: the store's snapshots must agree with the replay.

The service loads long streams from their latest snapshot, so a snapshot that differs from
its events would change what the service decides. Each one is checked as the replay passes
the version it was taken at.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.replay import AfterEvent
from allocation_ledger.audit.state import fingerprint

#: A stream's next snapshots read in one query (on PostgreSQL a read of one snapshot took
#: about 200 us of the audit's CPU, most of what checking it cost).
AHEAD = 32
#: Streams whose next snapshots are kept (the oldest let go first: memory stays bounded).
STREAMS = 1000


def snapshot_checker(store: EventStore) -> AfterEvent | None:
    """A hook comparing each stored snapshot with the replayed aggregate at the same
    version, called at the versions snapshots are taken at (``None`` when the store keeps
    no snapshots)."""
    snapshots = store.snapshots
    intervals = dict(store.snapshotting_intervals or {})
    if snapshots is None or not intervals:
        return None

    ahead: dict[UUID, deque[Any]] = {}  # each stream's snapshots read and not yet due

    def stored_at(stream: UUID, version: int) -> Any:
        """The stream's snapshot at ``version``, or ``None``; later ones are read with it."""
        queue = ahead.get(stream)
        while queue and queue[0].originator_version < version:
            queue.popleft()
        if not queue:
            queue = ahead[stream] = deque(snapshots.get(stream, gt=version - 1, limit=AHEAD))
            if len(ahead) > STREAMS:
                del ahead[next(iter(ahead))]
        return queue.popleft() if queue and queue[0].originator_version == version else None

    def check(where: Where, aggregate: Any) -> list[Finding]:
        version = aggregate.version
        snapshot: Any = stored_at(aggregate.id, version)
        if snapshot is None:
            return []  # snapshots are taken after the append; a crash may skip one
        replayed, snapped = fingerprint(aggregate), fingerprint(snapshot.mutate(None))
        differ = sorted(k for k in replayed if replayed[k] != snapped.get(k))
        if not differ:
            return []
        return [Finding.at(
            where, f.SNAPSHOT_DRIFT,
            f"the snapshot of {type(aggregate).__name__.lower()} {aggregate.uuid} at version "
            f"{version} differs from the replay in {', '.join(differ)}",
            {"uuid": aggregate.uuid, "fields": differ}, {"version": version})]

    return Check(intervals, check)


@dataclass(frozen=True)
class Check:
    """:data:`AfterEvent`: ``check`` of an aggregate whose version is a multiple of its
    class's interval in ``every`` (the store's snapshotting intervals)."""

    every: dict[type, int]
    check: Callable[[Where, Any], list[Finding]]

    def __call__(self, where: Where, aggregate: Any) -> list[Finding]:
        """The snapshot at ``aggregate``'s version compared with it, if one is stored."""
        return self.check(where, aggregate)
