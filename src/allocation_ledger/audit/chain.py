"""The audit's check of the hash chain, and of the ledger against recorded digests.

Every event's stored chain hash must be the link of the previous stored event's hash and
its own fields (``adapters/chain.py``). An edited, inserted, deleted or reordered event
breaks a link where it happened (:data:`CHAIN_BROKEN` at that position); an event stored
without a hash (inserted past the append) is :data:`CHAIN_MISSING`. A consistent rewrite
(every later hash recomputed) keeps the links whole, but not the chain computed from the
first event: a digest recorded before (``digest``: a position and its chain hash) then no
longer matches (:data:`DIGEST_MISMATCH`), and a ledger that ends below a digest, or lacks
the event at its position, was truncated or lost that event (:data:`DIGEST_MISSING`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eventsourcing.persistence import Notification

from allocation_ledger.adapters import chain
from allocation_ledger.adapters.notifications import chain_hash
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.ledger_events import as_uuid
from allocation_ledger.domain.errors import InvalidRequest


@dataclass(frozen=True)
class Digest:
    """The head of a ledger as recorded: a position and the chain hash there."""

    position: int
    chain_hash: bytes
    taken_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``digest --json`` prints it."""
        return {"position": self.position, "chain_hash": self.chain_hash.hex(),
                "taken_at": self.taken_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> Digest:
        """A digest read back; :class:`InvalidRequest` for one that is not."""
        try:
            return cls(int(data["position"]), bytes.fromhex(data["chain_hash"]),
                       str(data.get("taken_at", "")))
        except (KeyError, TypeError, ValueError) as err:
            raise InvalidRequest(f"{source} is not a digest (position and chain_hash): {err}",
                                 source=source) from err


def read_digests(paths: Iterable[str]) -> list[Digest]:
    """Digests from files: each a JSON object, a list of them, or one per line."""
    found: list[Digest] = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise InvalidRequest(f"cannot read digest file {path}: {err.strerror}",
                                 path=path) from err
        try:
            data = json.loads(text)
            items = data if isinstance(data, list) else [data]
        except json.JSONDecodeError:
            try:
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as err:
                raise InvalidRequest(f"{path} is not JSON: {err}", path=path) from err
        found += [Digest.from_dict(item, path) for item in items]
    return sorted(found, key=lambda d: d.position)


def head(last: Notification | None) -> Digest:
    """The digest of a ledger whose newest event is ``last``."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    if last is None:
        return Digest(0, chain.GENESIS, now)
    return Digest(last.id, chain_hash(last) or b"", now)


class ChainCheck:
    """Follows the ledger event by event; collects chain and digest findings."""

    def __init__(self, previous: bytes, key: chain.ChainKey | None,
                 digests: Iterable[Digest] = ()) -> None:
        self.key = key
        self.stored = previous  # the stored hash of the event before
        self.computed = previous  # the chain computed from the first event, never reset
        self.position = 0
        self.findings: list[Finding] = []
        self._digests = sorted(digests, key=lambda d: d.position)

    def observe(self, n: Notification) -> None:
        """Check one event's link, and any digest at or below its position."""
        self._digests_before(n.id, n)
        stored = chain_hash(n)
        link = chain.link(self.stored, n.id, n.originator_id, n.originator_version, n.topic,
                          n.state, self.key)
        self.computed = link if self.computed == self.stored else chain.link(
            self.computed, n.id, n.originator_id, n.originator_version, n.topic, n.state,
            self.key)
        where = Where(n.id, None, as_uuid(n.originator_id))
        if stored is None:
            self.findings.append(Finding.at(
                where, f.CHAIN_MISSING, f"the event at #{n.id} has no chain hash: it was "
                "written past the ledger's append", {"version": n.originator_version}))
        elif stored != link:
            self.findings.append(Finding.at(
                where, f.CHAIN_BROKEN, f"the chain breaks at #{n.id}: this event, or the "
                f"one before it (#{self.position}), was edited, inserted, deleted or "
                "reordered", {"version": n.originator_version, "previous": self.position}))
        self.stored = stored or link
        self.position = n.id
        if self._digests and self._digests[0].position == n.id:
            self._compare(self._digests.pop(0), where)

    def finish(self) -> None:
        """The ledger ended: digests beyond it say it was truncated."""
        for digest in self._digests:
            self.findings.append(Finding.at(
                Where(digest.position), f.DIGEST_MISSING,
                f"the ledger ends at #{self.position}, below the digest at #{digest.position}"
                f" (taken {digest.taken_at or 'at an unknown time'}): it was truncated",
                {"digest": digest.chain_hash.hex()}, {"last_position": self.position}))
        self._digests = []

    def unchecked(self) -> list[Digest]:
        """Digests beyond the events observed (an audit that stopped early)."""
        return list(self._digests)

    def _digests_before(self, position: int, n: Notification) -> None:
        while self._digests and self._digests[0].position < position:
            digest = self._digests.pop(0)
            self.findings.append(Finding.at(
                Where(digest.position), f.DIGEST_MISSING,
                f"the event at #{digest.position}, where a digest was taken, is gone (the next "
                f"is #{position}): events were deleted", {"digest": digest.chain_hash.hex()},
                {"next_position": position}))

    def _compare(self, digest: Digest, where: Where) -> None:
        if digest.chain_hash != self.computed:
            self.findings.append(Finding.at(
                where, f.DIGEST_MISMATCH,
                f"the ledger up to #{digest.position} is not the one the digest taken "
                f"{digest.taken_at or 'earlier'} recorded: history before it was changed",
                {"digest": digest.chain_hash.hex(), "computed": self.computed.hex()}))
