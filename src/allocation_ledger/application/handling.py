"""Handling one command: exactly once, under its command id, alone or in a group commit.

:func:`handle` is what every command of :class:`~.ledger.Ledger` runs through. It runs the
command's handler in attempts (:mod:`.attempts`) inside the command id's guarantees
(:mod:`.command_ids`: a retry replayed, a reused id refused, a lost connection recovered or
reported), and reads the caller's answer (``outcome``) from the unit of work that applied
it, or, when the id was already applied, from the ledger as that command left it.

With group commit on (:mod:`.grouping`), a command whose caller gave no id is decided and
appended in a group, unrecorded (no caller can retry it by id); a command that carries its
caller's id always runs alone, its record first in its own append, so that a retry, a clash
or a driver's resend is checked against that one record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.attempts import Handler, run
from allocation_ledger.application.command_ids import (
    CONNECTION_ERRORS,
    Intent,
    Reader,
    execute,
)
from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.domain.errors import OutcomeUnknown

C = TypeVar("C")
T = TypeVar("T")


def handle(store: EventStore, policy: WritePolicy, handler: Handler[C], command: C,
           intent: Intent, outcome: Callable[[Reader], T], new_consumers: Iterable[str] = (),
           commits: GroupCommit | None = None) -> T:
    """Apply ``command`` with ``handler`` under ``intent``; ``outcome`` read from what it
    left (flagged ``replayed`` when the command id was already applied). ``new_consumers``:
    the consumers the command expects to create; ``commits``: the group commit a command
    without a caller's id joins (``None``: group commit is off)."""
    if commits is not None and not intent.given:
        try:
            return outcome(commits.run(handler, command, intent, new_consumers))
        except CONNECTION_ERRORS as err:
            raise OutcomeUnknown(None, f"{type(err).__name__}: {err}".strip()) from err

    def attempt() -> T:
        return outcome(run(store, policy, handler, command, intent, new_consumers))

    return execute(store, intent, attempt, outcome)
