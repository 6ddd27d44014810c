"""Group commit: commands that arrive together from threads of one process share one append.

A thread with a command joins a queue. If no other thread is committing, it leads: it takes
the queue (up to ``MAX_GROUP`` commands) and decides them one after another, each against
the state the ones before it left (a provider changed earlier in the group is handed to the
next command as a copy of the group's version), then appends all their events in **one**
transaction, each command's events together and in the order the service always writes
them. Each caller gets its own answer. While it works, the next commands queue up; when it
is done the first of them leads the next group. A thread alone never waits: a group of one
is an ordinary command.

What keeps every guarantee of DESIGN §3:

- Every command of a group keeps its command record, first in its own block of the group's
  append, so exactly-once holds with groups on.
- A command refused inside the group (any error) adds nothing to the group; so that its
  refusal rests on what the store holds, not on a group that might yet fail, its caller
  decides it again alone (:func:`~.command_ids.handle`), after the group's append.
- A command that reads or writes a consumer an earlier command of the group touched waits
  for the next group: one consumer changes at most once per append, so every caller's
  generation is its own.
- If the store refuses the group's append (another process got in first, or the driver
  resent it after a lost reply), every caller is told of a :class:`~.unit_of_work.Clash`
  on an append that carried its record: it looks its record up (a resend that was applied
  is answered from it, never as a conflict) and otherwise runs again alone, with the usual
  conflict rules.
- The store's unique (stream, version) key is still the only arbiter across processes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError, ProgrammingError

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.application.unit_of_work import Clash, Handler, UnitOfWork
from allocation_ledger.domain.command import Intent
from allocation_ledger.domain.provider import Provider

C = TypeVar("C")
#: Most commands one append carries.
MAX_GROUP = 256


def _held() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass
class _Pending(Generic[C]):
    """One caller's command, and its answer once there is one: the unit of work that
    applied it, an error, or neither (its caller decides it alone)."""

    handler: Handler[C]
    command: C
    intent: Intent
    new_consumers: tuple[str, ...]
    lead: bool = False
    result: UnitOfWork | None = None
    error: BaseException | None = None
    #: held until the caller is woken: a bare lock it waits on by acquiring it (an Event,
    #: which builds a Condition and a lock per wait, costs several times more)
    _signal: threading.Lock = field(default_factory=_held, repr=False)

    def wait(self) -> None:
        """Until woken: answered, or handed the lead."""
        self._signal.acquire()

    def wake(self) -> None:
        """Wake the caller. A queued command is woken once (answered) or twice (handed the
        lead, which its caller's one wait takes, then answered); a command that led from
        the start, once (answered): never more than its lock was taken."""
        self._signal.release()

    def answer(self, result: UnitOfWork | None = None,
               error: BaseException | None = None) -> None:
        self.result, self.error = result, error
        self.wake()


class Group:
    """What the commands already decided in one group commit changed: their providers (the
    next command decides on copies of these), the consumers they touched, and every
    aggregate to append."""

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self._consumers: set[str] = set()
        self._changed: dict[UUID, Aggregate] = {}

    def admits(self, uow: UnitOfWork) -> bool:
        """True when a command decided in ``uow`` can join: it touched no consumer an
        earlier command touched, and no provider it read from the cache was stale."""
        return not (uow.consumer_uuids & self._consumers) and not uow.doubtful(
            unwritten_only=True)

    def take(self, uow: UnitOfWork) -> list[Any]:
        """Add an admitted command; its events, its record first, in the order they are
        appended."""
        changed = uow.changed()
        uow.appended = sum(len(a.pending_events) for a in changed)
        if changed or (uow.intent is not None and uow.intent.given):
            records = uow.record(changed, uow.appended)
            self._changed.update((r.id, r) for r in records)
            changed = [*records, *changed]
        events: list[Any] = []
        for aggregate in changed:
            events += aggregate.collect_events()
            self._changed[aggregate.id] = aggregate
            if isinstance(aggregate, Provider):
                self.providers[aggregate.uuid] = aggregate
        self._consumers |= uow.consumer_uuids
        return events

    def aggregates(self) -> list[Aggregate]:
        """Every aggregate the group changed, as the group left it."""
        return list(self._changed.values())


class GroupCommit:
    """Groups the commands of concurrent threads on one store (see the module)."""

    def __init__(self, store: EventStore, policy: WritePolicy, max_group: int = MAX_GROUP,
                 ) -> None:
        self._store = store
        self._policy = policy
        self._max = max_group
        self._lock = threading.Lock()
        self._queue: list[_Pending[Any]] = []
        self._busy = False
        #: appends shared by several commands, and the commands they carried (for
        #: benchmarks and tests; a group of one is an ordinary command)
        self.appends = 0
        self.grouped = 0

    @property
    def waiting(self) -> int:
        """How many commands are queued for the next group."""
        return len(self._queue)

    def run(self, handler: Handler[C], command: C, intent: Intent,
            new_consumers: Iterable[str] = ()) -> UnitOfWork | None:
        """Decide and append one command, with whatever other threads sent meanwhile; the
        unit of work that applied it, or ``None`` when its caller is to decide it alone."""
        pending: _Pending[C] = _Pending(handler, command, intent, tuple(new_consumers))
        with self._lock:
            queued = self._busy
            if queued:
                self._queue.append(pending)
            else:
                self._busy = True
                pending.lead = True
        if queued:  # (its lead may be set already: it still takes the wake that came with it)
            pending.wait()
        if pending.lead:  # first, or handed the lead by the last group's leader
            self._lead(pending)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _lead(self, pending: _Pending[Any]) -> None:
        """Commit one group (``pending`` and what queued before it), then hand over."""
        with self._lock:
            group = [pending, *self._queue[:self._max - 1]]
            del self._queue[:self._max - 1]
        try:
            self._commit(group)
        finally:
            with self._lock:
                if self._queue:
                    following = self._queue.pop(0)
                    following.lead = True
                    following.wake()
                else:
                    self._busy = False

    def _commit(self, group: list[_Pending[Any]]) -> None:
        shared = Group()
        trusting = self._policy.trusts_cache(1)
        taken: list[tuple[_Pending[Any], UnitOfWork]] = []
        events: list[Any] = []
        later: list[_Pending[Any]] = []  # answered once the group's append is over
        for pending in group:
            uow = UnitOfWork(self._store, pending.intent, policy=self._policy, attempt=1,
                             new_consumers=pending.new_consumers if trusting else (),
                             decided=shared.providers)
            try:
                pending.handler(uow, pending.command)
                admitted = shared.admits(uow)  # may read the store: may fail too
            except BaseException:  # decided again alone by its caller
                admitted = False
            if not admitted:
                later.append(pending)
                continue
            events += shared.take(uow)
            taken.append((pending, uow))
        if taken:
            self._append(events, shared, taken)
        for pending in later:
            pending.answer()

    def _append(self, events: list[Any], shared: Group,
                taken: list[tuple[_Pending[Any], UnitOfWork]]) -> None:
        aggregates: list[Aggregate] = shared.aggregates()
        try:
            if events:
                self._store.append(events, aggregates)
        except IntegrityError as err:
            self._policy.clashed(shared.providers)
            for pending, _ in taken:  # each looks its record up, or runs again alone
                pending.answer(error=_clash(err))
            return
        except ProgrammingError:  # refused, not for a clash (a read-only role, say):
            for pending, _ in taken:  # each hears of it as it would alone
                pending.answer()
            return
        except BaseException as err:  # every caller hears of it
            for pending, _ in taken:
                pending.answer(error=err)
            return
        self._store.remember(shared.providers.values())  # as the group left them
        if len(taken) > 1:
            self.appends += 1
            self.grouped += len(taken)
        for pending, uow in taken:
            pending.answer(uow)


def _clash(err: IntegrityError) -> Clash:
    clash = Clash()
    clash.__cause__ = err
    return clash
