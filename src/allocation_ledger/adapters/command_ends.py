"""Where one command's events end and the next command's begin, in a replay of the ledger.

The audit checks the invariants there; the projections end their batches there. (It sits
with the other replay helpers, beside ``decoding``, so both can use it.)

The store does not record transactions, but the way the service appends makes some
boundaries certain. One command's events are consecutive and share one ``request``
mapping; each stream it touches appears as one block, and the blocks come in a fixed order:
first the streams the command created (starting with a creation event, version 1), then the
existing providers it changed, then the existing consumers. A block of an existing stream
holds exactly one event (a command writes each existing stream once). So, comparing each
event with the one before it only, a new command has certainly begun when

- the ``request`` differs;
- the same stream goes on after a one-event block of an existing stream;
- a new block ranks below the previous one (created < provider < consumer).

Those are the only cuts made. Two commands that follow each other without any of those
signs are read as one, which is safe for the checks: every cut is a real end of command, so
the ledger must be consistent there; only the state between the two goes unchecked. (A
stream coming back after other streams also proves a boundary, but not where it is, so it
is not used.) The service stamps every command's events with their own ``command_id`` in
``request``, so on ledgers it wrote the cuts are exact.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.provider_name import ProviderName

CREATED, PROVIDER, CONSUMER = 0, 1, 2


class CommandSplitter:
    """Feed it events in ledger order; it says which ones certainly open a new command."""

    def __init__(self, use_request: bool = True) -> None:
        self._use_request = use_request
        self._stream: UUID | None = None
        self._rank = CREATED  # the rank of the block the previous event belongs to
        self._request: Any = None

    def opens_command(self, event: Any) -> bool:
        """True when ``event`` certainly belongs to a later command than the one before."""
        stream: UUID = event.originator_id
        request = getattr(event, "request", None)
        previous, rank, previous_request = self._stream, self._rank, self._request
        self._stream, self._request = stream, request
        if previous is None:
            self._rank = _rank(event)
            return False
        if self._use_request and request != previous_request:
            self._rank = _rank(event)
            return True
        if self._use_request and isinstance(request, dict) and request.get("command_id"):
            return False  # one command id: one command, whatever its streams
        if stream == previous:
            if rank == CREATED:
                return False  # a new stream's block goes on (Registered, InventoriesSet)
            self._rank = _rank(event)
            return True
        self._rank = _rank(event)
        return self._rank < rank


def _rank(event: Any) -> int:
    if isinstance(event, ProviderName.Event):
        return CONSUMER  # a command appends the names it takes or lets go last
    if event.originator_version == 1 or isinstance(event, Provider.Reregistered):
        return CREATED
    return PROVIDER if isinstance(event, Provider.Event) else CONSUMER
