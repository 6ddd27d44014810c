"""Applying one command under its intent: the session's retries inside, the command id's
guarantees (replay, reuse, lost connections; see :mod:`.commands`) around them.

With group commit on (see :mod:`.grouping`), a command whose caller gave no command id is
decided and appended in a group, unrecorded (no caller can retry it by id); a command that
carries its caller's id always runs alone, its record first in its own append, so that a
retry, a clash or a driver's resend is checked against that one record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.commands import CONNECTION_ERRORS, Intent, Reader, execute
from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.session import Session, run
from allocation_ledger.domain.errors import OutcomeUnknown

T = TypeVar("T")


def apply_command(store: EventStore, it: Intent, decide: Callable[[Session], object],
                  outcome: Callable[[Reader], T], new_consumers: Iterable[str] = (),
                  commits: GroupCommit | None = None) -> T:
    """Decide and append the command (its record with it), and return ``outcome`` read
    from the session that applied it, or, when the command id was already applied, from
    the ledger as that command left it (flagged ``replayed``). ``commits``: the group
    commit a command without a caller's id may join (when it is on)."""

    def deciding(session: Session) -> Session:
        decide(session)
        return session

    if commits is not None and commits.enabled and not it.given:
        try:
            return outcome(commits.run(deciding, new_consumers))
        except CONNECTION_ERRORS as err:
            raise OutcomeUnknown(None, f"{type(err).__name__}: {err}".strip()) from err

    def attempt() -> T:
        return outcome(run(store, deciding, new_consumers, it))

    return execute(store, it, attempt, outcome)


class Commands:
    """What every command of the service API runs through (:func:`apply_command`): its
    intent (command id) and its store's group commit."""

    store: EventStore
    commits: GroupCommit

    def _apply(self, it: Intent, decide: Callable[[Session], object],
               outcome: Callable[[Reader], T], new_consumers: Iterable[str] = ()) -> T:
        return apply_command(self.store, it, decide, outcome, new_consumers, self.commits)
