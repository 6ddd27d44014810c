"""Applying one command under its intent: the session's retries inside, the command id's
guarantees (replay, reuse, lost connections; see :mod:`.commands`) around them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.commands import Intent, Reader, execute
from allocation_ledger.application.session import Session, run

T = TypeVar("T")


def apply_command(store: EventStore, it: Intent, decide: Callable[[Session], object],
                  outcome: Callable[[Reader], T], new_consumers: Iterable[str] = ()) -> T:
    """Decide and append the command (its record with it), and return ``outcome`` read
    from the session that applied it, or, when the command id was already applied, from
    the ledger as that command left it (flagged ``replayed``)."""

    def attempt() -> T:
        def deciding(session: Session) -> Session:
            decide(session)
            return session

        return outcome(run(store, deciding, new_consumers, it))

    return execute(store, it, attempt, outcome)
