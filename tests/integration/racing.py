"""Racing real writers against one PostgreSQL ledger: threads, and long-lived processes.

A race is a list of :class:`Call` s released together by a barrier, each by its own racer:

    outcomes = arena.racer("processes").race([claim_call(a, want), claim_call(b, want)])

:class:`ThreadRacer` runs the calls on threads sharing one :class:`Ledger` (one connection
pool); :class:`ProcessRacer` sends them to worker processes started once (``spawn``) that
each opened their own ledger on the same schema, so every round is a race between separate
interpreters and separate connections, as between two Nova conductors. Each racer reports
an :class:`Outcome` (the value, or the error's class name and fields, and when it ran).

An :class:`Arena` is one schema for a whole test module: rounds use fresh hosts and
consumers, and :meth:`Arena.assert_round` checks the invariants of what one round wrote.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import ConcurrentUpdate, InsufficientCapacity, LedgerError
from tests.builders import PROJECT, USER, new_id
from tests.invariants import violations
from tests.stores import postgres_schema_url

#: How long a racer waits for the others at the barrier, and the runner for a result.
BARRIER_TIMEOUT = 60.0
RESULT_TIMEOUT = 120.0

#: Ledger methods a :class:`Call` may name (plus the helpers in ``_HELPERS``).
LEDGER_METHODS = frozenset({
    "claim", "write_allocations", "release", "force_release", "swap", "confirm", "revert",
    "set_devices", "set_inventories",
})

Allocs = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Call:
    """One racer's command: a ledger method (or racing helper) and its arguments.

    ``delay`` (seconds) holds the racer back after the barrier: a small head start for the
    other, so that a race whose quicker command would always win is won both ways."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """What one racer got. ``in_store`` says the error came from the store refusing the
    append (a real clash on the unique (stream, version) key), not from a stale read."""

    value: Any = None
    error: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    in_store: bool = False
    started: float = 0.0
    finished: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.error is None


def claim_call(
    consumer: str,
    allocations: Allocs,
    expected_generation: int | None = None,
    devices: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> Call:
    """A :meth:`Ledger.claim` of ``allocations`` for ``consumer``."""
    kwargs: dict[str, Any] = {"project_id": PROJECT, "user_id": USER}
    if devices is not None:
        kwargs["devices"] = {rp: {rc: list(ids) for rc, ids in by.items()}
                             for rp, by in devices.items()}
    plain = {rp: dict(r) for rp, r in allocations.items()}
    return Call("claim", (consumer, plain, expected_generation), kwargs)


def claim_many(ledger: Ledger, hosts: Sequence[str], count: int, seed: int) -> dict[str, Any]:
    """Claim (and now and then release) ``count`` times on random ``hosts``.

    Returns ``held`` (consumer -> allocations it still holds) and ``refused`` (error
    name -> count). Only capacity refusals and exhausted retries are expected; any other
    error propagates and fails the racer.
    """
    rng = random.Random(seed)
    held: dict[str, dict[str, dict[str, int]]] = {}
    refused: dict[str, int] = {}
    for _ in range(count):
        if held and rng.random() < 0.25:
            # Release churn: usage must also come back down correctly under contention.
            consumer = rng.choice(sorted(held))
            try:
                ledger.release(consumer, 1)
            except ConcurrentUpdate:
                refused["ConcurrentUpdate"] = refused.get("ConcurrentUpdate", 0) + 1
                continue
            del held[consumer]
            continue
        consumer = new_id()
        want = {rng.choice(list(hosts)): {"VCPU": rng.randint(1, 3),
                                          "MEMORY_MB": 512 * rng.randint(1, 4)}}
        try:
            ledger.claim(consumer, want, None, project_id=PROJECT, user_id=USER)
        except (InsufficientCapacity, ConcurrentUpdate) as err:
            name = type(err).__name__
            refused[name] = refused.get(name, 0) + 1
            continue
        held[consumer] = want
    return {"held": held, "refused": refused}


def _noop(ledger: Ledger) -> None:
    """A racer with nothing to do this round (it still meets the others at the barrier)."""


def open_and_close(ledger: Ledger, url: str) -> None:
    """Open a second ledger on ``url`` (as a starting service would) and close it."""
    open_ledger(url).close()


_HELPERS: dict[str, Callable[..., Any]] = {
    "noop": _noop, "claim_many": claim_many, "open_and_close": open_and_close,
}


def perform(ledger: Ledger, call: Call) -> Any:
    """Run ``call`` against ``ledger`` and return its result."""
    if call.method in _HELPERS:
        return _HELPERS[call.method](ledger, *call.args, **call.kwargs)
    if call.method not in LEDGER_METHODS:
        raise ValueError(f"not a racing call: {call.method}")
    return getattr(ledger, call.method)(*call.args, **call.kwargs)


def attempt(ledger: Ledger, call: Call) -> Outcome:
    """Run ``call`` and report what happened, errors included, with its start and end."""
    if call.delay:
        time.sleep(call.delay)
    started = time.monotonic()
    try:
        value = perform(ledger, call)
    except LedgerError as err:
        return Outcome(error=type(err).__name__, fields=dict(err.fields),
                       in_store=isinstance(err.__cause__, IntegrityError),
                       started=started, finished=time.monotonic())
    except Exception as err:  # anything else is a failure the test must show, not a crash
        return Outcome(error=f"unexpected {type(err).__name__}", fields={"message": repr(err)},
                       started=started, finished=time.monotonic())
    return Outcome(value=value, started=started, finished=time.monotonic())


def overlapped(outcomes: Sequence[Outcome]) -> bool:
    """True when every racer was in flight at one same moment (a real race, not a queue)."""
    return max(o.started for o in outcomes) < min(o.finished for o in outcomes)


class Racer(Protocol):
    """Runs calls at the same time and reports each one's outcome, in order."""

    kind: str
    parties: int

    def race(self, calls: Sequence[Call]) -> list[Outcome]:
        """Release ``calls`` together; their outcomes in the same order."""
        ...


class ThreadRacer:
    """Races calls on threads that share one ledger (and its connection pool)."""

    kind = "threads"

    def __init__(self, ledger: Ledger, parties: int) -> None:
        self.parties = parties
        self._ledger = ledger
        self._pool = ThreadPoolExecutor(parties, thread_name_prefix="racer")

    def race(self, calls: Sequence[Call]) -> list[Outcome]:
        """Release ``calls`` together on as many threads."""
        if not 0 < len(calls) <= self.parties:
            raise ValueError(f"{len(calls)} calls for {self.parties} threads")
        barrier = threading.Barrier(len(calls))

        def run(call: Call) -> Outcome:
            barrier.wait(BARRIER_TIMEOUT)
            return attempt(self._ledger, call)

        # Threads released by the barrier each need the interpreter lock to start: with
        # the default 5 ms switch interval, a claim shorter than that could finish before
        # the last racer has begun, and the race became a queue.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        try:
            futures = [self._pool.submit(run, call) for call in calls]
            return [f.result(timeout=RESULT_TIMEOUT) for f in futures]
        finally:
            sys.setswitchinterval(interval)

    def close(self) -> None:
        """Stop the threads."""
        self._pool.shutdown(wait=True)


def _worker(url: str, index: int, barrier: Any, inbox: Any, results: Any) -> None:
    """A worker process: open the ledger once (all at once: opening must tolerate that),
    then race every call it is sent."""
    with open_ledger(url) as ledger:
        while (item := inbox.get()) is not None:
            round_no, call = item
            try:
                barrier.wait(BARRIER_TIMEOUT)
            except threading.BrokenBarrierError:
                results.put((round_no, index, Outcome(error="unexpected BrokenBarrierError")))
                continue
            results.put((round_no, index, attempt(ledger, call)))


class ProcessRacer:
    """Races calls in worker processes started once, each with its own ledger and pool.

    Every round sends one call to every worker (``noop`` to those with nothing to do), so
    one barrier of all workers releases them together.
    """

    kind = "processes"

    def __init__(self, url: str, parties: int, method: str = "spawn") -> None:
        ctx: Any = mp.get_context(method)  # typeshed's BaseContext lacks Process
        self.parties = parties
        self._round = 0
        self._barrier = ctx.Barrier(parties)
        self._results: Any = ctx.Queue()
        self._inboxes: list[Any] = [ctx.Queue() for _ in range(parties)]
        self._workers = [
            ctx.Process(target=_worker, name=f"racer-{i}", daemon=True,
                        args=(url, i, self._barrier, inbox, self._results))
            for i, inbox in enumerate(self._inboxes)
        ]
        for worker in self._workers:
            worker.start()
        try:
            self.race([])  # every worker has opened its ledger before the first real round
        except BaseException:
            self.close()
            raise

    def race(self, calls: Sequence[Call]) -> list[Outcome]:
        """Release ``calls`` together, one per worker process."""
        if len(calls) > self.parties:
            raise ValueError(f"{len(calls)} calls for {self.parties} processes")
        self._round += 1
        padded = [*calls, *[Call("noop")] * (self.parties - len(calls))]
        for inbox, call in zip(self._inboxes, padded, strict=True):
            inbox.put((self._round, call))
        got: dict[int, Outcome] = {}
        deadline = time.monotonic() + RESULT_TIMEOUT
        while len(got) < self.parties:
            try:
                round_no, index, outcome = self._results.get(timeout=1.0)
            except queue.Empty:
                dead = [w.name for w in self._workers if not w.is_alive()]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"racers lost: dead {dead}, got {sorted(got)}") from None
                continue
            if round_no == self._round:
                got[index] = outcome
        return [got[i] for i in range(len(calls))]

    def close(self) -> None:
        """Stop the workers (they close their ledgers)."""
        for inbox in self._inboxes:
            inbox.put(None)
        for worker in self._workers:
            worker.join(timeout=15)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5)


def with_pool(url: str, size: int, overflow: int) -> str:
    """``url`` with a small connection pool (the server allows 100 connections in all)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}pool_size={size}&max_overflow={overflow}"


class _Since:
    """The part of a :class:`Ledger` that ``tests.invariants`` reads, limited to what was
    written after ``start``: exactly one round's streams, since every round uses fresh
    hosts and consumers. Keeps the per-round check cheap as the shared schema grows."""

    def __init__(self, ledger: Ledger, start: int) -> None:
        self._ledger = ledger
        self._start = start
        self.store = self
        self.recorder = self

    def select_notifications(self, start: int, limit: int, stop: int | None = None,
                             topics: Sequence[str] = ()) -> Any:
        return self._ledger.store.recorder.select_notifications(
            max(start, self._start + 1), limit, stop=stop, topics=topics)

    def get(self, stream_id: UUID) -> Any:
        return self._ledger.store.get(stream_id)


@dataclass
class Arena:
    """One PostgreSQL schema, its ledger, and both kinds of racer, for a test module."""

    url: str
    ledger: Ledger
    threads: ThreadRacer
    processes: ProcessRacer

    def racer(self, kind: str) -> Racer:
        """The thread or process racer."""
        return self.threads if kind == "threads" else self.processes

    def position(self) -> int:
        """The ledger's last position (0 when empty): where a round starts."""
        return self.ledger.store.recorder.max_notification_id() or 0

    def assert_round(self, start: int, hosts: Sequence[str]) -> None:
        """guarantees §5 invariants over the streams written since ``start``, and no class of
        ``hosts`` above capacity."""
        problems = violations(cast(Ledger, _Since(self.ledger, start)))
        for host in hosts:
            view = self.ledger.provider(host)
            problems += [f"host {host} {rc}: {c.used} used > capacity {c.capacity}"
                         for rc, c in view.classes.items() if c.used > c.capacity]
        assert not problems, "\n".join(problems)


@contextmanager
def arena(threads: int = 6, processes: int = 4) -> Iterator[Arena]:
    """A fresh schema with a ledger, a thread racer and started worker processes.

    Skips (fails under ``LEDGER_REQUIRE_POSTGRES=1``) without PostgreSQL.
    """
    with postgres_schema_url() as url, ExitStack() as stack:
        # Opening here creates the tables before any worker opens the schema.
        ledger = stack.enter_context(open_ledger(with_pool(url, 4, threads)))
        thread_racer = ThreadRacer(ledger, threads)
        stack.callback(thread_racer.close)
        process_racer = ProcessRacer(with_pool(url, 1, 1), processes)
        stack.callback(process_racer.close)
        yield Arena(url, ledger, thread_racer, process_racer)


def tally(outcomes: Sequence[Outcome], into: dict[str, int]) -> None:
    """Count outcomes by error name (``ok`` for successes) into ``into``."""
    for outcome in outcomes:
        key = outcome.error or "ok"
        into[key] = into.get(key, 0) + 1
