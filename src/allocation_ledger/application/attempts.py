"""Running one command: attempts under the write policy until one commits or is refused.

Each attempt is the same three steps: a fresh :class:`~.unit_of_work.UnitOfWork`, the
command's handler (it loads through the unit of work and lets the domain decide), and the
commit. What the policy lets an attempt take unread is checked before it counts: a refusal
decided on it, or a commit about to rest on it, sends the command to its next attempt,
which reads everything fresh. A :class:`~.unit_of_work.Clash` (provider streams only) runs
it again after the policy's pause; a consumer generation conflict is never retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from eventsourcing.persistence import IntegrityError

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.command_ids import Intent
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.application.unit_of_work import Clash, UnitOfWork
from allocation_ledger.domain.errors import ConcurrentUpdate, LedgerError

C = TypeVar("C")
#: A command's handler: load through the unit of work, let the domain decide.
Handler = Callable[[UnitOfWork, C], object]


def run(store: EventStore, policy: WritePolicy, handler: Handler[C], command: C,
        intent: Intent, new_consumers: Iterable[str] = (), *,
        recorded: bool = True) -> UnitOfWork:
    """Decide and commit ``command`` with ``handler``; the unit of work that committed it.

    An error found on a later attempt than the first has the store's refusal of the first
    attempt's append as its ``__cause__`` when that attempt took a consumer as new unread.
    """
    metrics = store.metrics  # None unless instrumented (allocation_ledger.metrics)
    new_consumers = tuple(new_consumers)
    refused: IntegrityError | None = None  # the store refused a consumer taken as new
    uow: UnitOfWork | None = None
    for attempt in policy.attempts():
        if attempt > 1 and metrics is not None:
            metrics.retried()
        trusting = policy.trusts_cache(attempt)
        uow = UnitOfWork(store, intent, policy=policy, attempt=attempt,
                         new_consumers=new_consumers, recorded=recorded, turns=True)
        try:
            try:
                handler(uow, command)
            except LedgerError as err:
                if trusting and uow.doubtful(unwritten_only=False):
                    continue
                if metrics is not None:
                    metrics.refused(type(err).__name__)
                if refused is not None and err.__cause__ is None:
                    raise err from refused
                raise
            if trusting and uow.doubtful(unwritten_only=True):
                continue
            began = time.perf_counter()
            uow.commit()
        except Clash as clash:
            if trusting and uow.assumed_absent and isinstance(clash.__cause__, IntegrityError):
                refused = clash.__cause__
            _after_clash(policy, uow, attempt)
            continue
        finally:
            uow.end_turns()
        if metrics is not None:
            metrics.appended(time.perf_counter() - began)
        return uow
    if metrics is not None:
        metrics.refused(ConcurrentUpdate.__name__)
    raise ConcurrentUpdate(uow.provider_uuids if uow is not None else [], policy.max_attempts)


def _after_clash(policy: WritePolicy, uow: UnitOfWork, attempt: int) -> None:
    """Note the providers clashed on, let go of them, and pause as the policy says."""
    policy.clashed(uow.written)
    uow.end_turns()
    pause = policy.pause(attempt)
    if pause:
        time.sleep(pause)
