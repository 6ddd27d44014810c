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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
    #: whether the chain was keyed (None: not recorded, a digest from before the field)
    keyed: bool | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``digest --json`` prints it."""
        return {"position": self.position, "chain_hash": self.chain_hash.hex(),
                "taken_at": self.taken_at, "keyed": self.keyed}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> Digest:
        """A digest read back; :class:`InvalidRequest` for one that is not."""
        try:
            digest = cls(int(data["position"]), bytes.fromhex(data["chain_hash"]),
                         str(data.get("taken_at", "")), data.get("keyed"))
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as err:
            raise InvalidRequest(f"{source} is not a digest (position and chain_hash): {err}",
                                 source=source) from err
        if not 0 <= digest.position < 2**63 or len(digest.chain_hash) != len(chain.GENESIS) \
                or not (digest.keyed is None or isinstance(digest.keyed, bool)):
            raise InvalidRequest(f"{source} is not a digest: a position from 0, a chain hash "
                                 "of 32 bytes (64 hex digits) and keyed true or false "
                                 "expected", source=source)
        return digest


def read_digests(paths: Iterable[str]) -> list[Digest]:
    """Digests from files: each a JSON object, a list of them, or one per line. A file
    that cannot be read as digests, or holds none, is an :class:`InvalidRequest`: an audit
    asked to check a digest never passes without checking one."""
    found: list[Digest] = []
    for path in paths:
        items = _items(path)
        if not items:
            raise InvalidRequest(f"{path} holds no digest: no digest would be checked",
                                 path=path)
        found += [Digest.from_dict(item, path) for item in items]
    return sorted(found, key=lambda d: d.position)


def _items(path: str) -> list[Any]:
    """The JSON values of a digest file (a list's items, or one per line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidRequest(f"cannot read digest file {path}: {err.strerror}",
                             path=path) from err
    except UnicodeDecodeError as err:
        raise InvalidRequest(f"{path} is not a digest file: not UTF-8 text ({err.reason} at "
                             f"byte {err.start})", path=path) from err
    try:
        try:
            data = json.loads(text)
            return data if isinstance(data, list) else [data]
        except json.JSONDecodeError:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise InvalidRequest(f"{path} is not JSON: {err}", path=path) from err
    except RecursionError as err:  # nesting deeper than the parser goes: no digest is
        raise InvalidRequest(f"{path} is not a digest file: JSON nested too deeply",
                             path=path) from err


def head(last: Notification | None, keyed: bool | None = None) -> Digest:
    """The digest of a ledger whose newest event is ``last``; ``keyed``: whether its chain
    is keyed (recorded, so that a chain recomputed without the key is found)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    if last is None:
        return Digest(0, chain.GENESIS, now, keyed)
    return Digest(last.id, chain_hash(last) or b"", now, keyed)


class ChainCheck:
    """Follows the ledger event by event; collects chain and digest findings."""

    def __init__(self, previous: bytes, key: chain.ChainKey | None,
                 digests: Iterable[Digest] = ()) -> None:
        self.key = key
        self._link = chain.linker(key)
        self.stored = previous  # the stored hash of the event before
        self.computed = previous  # the chain computed from the first event, never reset
        self.position = 0
        self.findings: list[Finding] = []
        # the same digest recorded twice (``digest --json >> file`` with no write between,
        # one file given twice) is one digest; two different ones at a position are both
        # compared, and one of them cannot match
        unique = {(d.position, d.chain_hash): d for d in digests}.values()
        self._digests = sorted((d for d in unique if d.position > 0),
                               key=lambda d: d.position)
        for digest in unique:  # an empty ledger's head: every chain starts from it
            if digest.position == 0 and digest.chain_hash != chain.GENESIS:
                self._mismatch(digest, Where(0), chain.GENESIS)

    def observe(self, n: Notification) -> None:
        """Check one event's link, and any digest at or below its position."""
        position, digests = n.id, self._digests
        if digests and digests[0].position < position:
            self._digests_before(position, n)
        self._links((n,))
        if digests and digests[0].position == position:
            where = Where(position, None, as_uuid(n.originator_id))
            while digests and digests[0].position == position:
                self._compare(digests.pop(0), where)

    def observe_all(self, batch: Sequence[Notification]) -> None:
        """:meth:`observe` each of ``batch`` in order: its links in one loop where no
        digest falls in it (the chain check of a replay reading the store batch by batch)."""
        digests = self._digests
        if batch and digests and digests[0].position <= batch[-1].id:
            for n in batch:
                self.observe(n)
        else:
            self._links(batch)

    def _links(self, batch: Iterable[Notification]) -> None:
        """Check each event's link to the one before it, in order."""
        link, stored, computed, position = self._link, self.stored, self.computed, self.position
        for n in batch:
            found = chain_hash(n)
            new = link(stored, n.id, n.originator_id, n.originator_version, n.topic, n.state)
            computed = new if computed == stored else link(
                computed, n.id, n.originator_id, n.originator_version, n.topic, n.state)
            if found != new:
                self.position = position  # the event before, which _broken names
                self._broken(n, found)
            stored = found or new
            position = n.id
        self.stored, self.computed, self.position = stored, computed, position

    def _broken(self, n: Notification, stored: bytes | None) -> None:
        where = Where(n.id, None, as_uuid(n.originator_id))
        if stored is None:
            self.findings.append(Finding.at(
                where, f.CHAIN_MISSING, f"the event at #{n.id} has no chain hash: it was "
                "written past the ledger's append", {"version": n.originator_version}))
        else:
            self.findings.append(Finding.at(
                where, f.CHAIN_BROKEN, f"the chain breaks at #{n.id}: this event, or the "
                f"one before it (#{self.position}), was edited, inserted, deleted or "
                "reordered", {"version": n.originator_version, "previous": self.position}))

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
        if digest.keyed and self.key is None:  # no unkeyed chain can match a keyed one
            self.findings.append(Finding.at(
                where, f.CHAIN_DOWNGRADED,
                f"the digest at #{digest.position} (taken {digest.taken_at or 'earlier'}) "
                "recorded a keyed hash chain; the ledger's chain now reads unkeyed: it was "
                "recomputed without the key, and what it vouches for cannot be trusted",
                {"digest": digest.chain_hash.hex()}))
        elif digest.chain_hash != self.computed:
            self._mismatch(digest, where, self.computed)

    def _mismatch(self, digest: Digest, where: Where, computed: bytes) -> None:
        self.findings.append(Finding.at(
            where, f.DIGEST_MISMATCH,
            f"the ledger up to #{digest.position} is not the one the digest taken "
            f"{digest.taken_at or 'earlier'} recorded: history before it was changed",
            {"digest": digest.chain_hash.hex(), "computed": computed.hex()}))
