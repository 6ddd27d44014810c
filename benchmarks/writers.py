"""Several writer processes at once (multiprocessing, spawn context).

Each writer is a fresh process with its own connections: it prepares (opens the store,
registers its own host, warms up), waits at a barrier with the others, then works for the
same number of seconds. Their samples merge into one: the rate is every writer's operations
over the wall time from the first start to the last finish, the CPU every writer's own and
(on PostgreSQL) its backends' over the seconds it worked (``benchmarks/cpu.py``).

A writer either claims (role ``claims``: a new instance on its own host per operation, as
a scheduler spreading instances over hosts would; role ``shared``: a new instance on one of
a few hosts every writer claims on, picked at random, so that writers clash on provider
streams) or inserts raw rows (role ``floor``; ``ordered``: each in a transaction that commits
in insert order, ``RawTable.insert_ordered``).
"""

from __future__ import annotations

import multiprocessing
import queue
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from benchmarks.cpu import Meter
from benchmarks.stats import Sample, merge, run_for

WARMUP = 20
TIMEOUT = 300.0
CLAIMS = "claims"
SHARED = "shared"
FLOOR = "floor"
ORDERED = "ordered"


def _operation(role: str, target: str, hosts: Sequence[str], appends: list[int],
               turns: bool = True) -> tuple[Callable[[], object], Callable[[], None]]:
    """The operation a writer repeats, and how to clean up after it; ``appends`` counts
    the appends a ledger asks of its store (refused ones too); ``turns``: whether the
    ledger's writers take turns on contended hosts (its write policy's ``takes_turns``)."""
    if role in (FLOOR, ORDERED):
        from benchmarks.floor import open_raw_table

        table = open_raw_table(target)
        return (table.insert if role == FLOOR else table.insert_ordered), table.close
    from allocation_ledger.application.policy import WritePolicy
    from allocation_ledger.bootstrap import open_ledger
    from benchmarks.workload import a_host, claimer, shared_claimer

    ledger = open_ledger(target, policy=WritePolicy(takes_turns=turns))
    recorder = ledger.store.recorder
    insert = recorder.insert_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        appends[0] += 1
        return insert(*args, **kwargs)

    recorder.insert_events = counted  # type: ignore[method-assign]
    if role == SHARED:
        if target.startswith("memory:"):  # each process has a store of its own
            for host in hosts:
                a_host(ledger, "shared", host)
        return shared_claimer(ledger, list(hosts)), ledger.close
    return claimer(ledger, a_host(ledger)), ledger.close


def _writer(role: str, target: str, hosts: Sequence[str], duration: float,
            barrier: Barrier, results: Queue[Any], turns: bool) -> None:
    """One writer process: prepare, wait for the others, work, report."""
    try:
        appends = [0]
        operation, close = _operation(role, target, hosts, appends, turns)
        meter = Meter(target)
        try:
            for _ in range(WARMUP):
                operation()
            barrier.wait(TIMEOUT)
            appends[0] = 0
            before = meter.read()
            start = time.perf_counter()
            sample = run_for(operation, duration)
            cpu = meter.read() - before
            results.put(("ok", start, replace(sample, appends=appends[0], client_cpu=cpu.client,
                                              backend_cpu=cpu.backend)))
        finally:
            meter.close()
            close()
    except BaseException:
        barrier.abort()
        results.put(("error", 0.0, traceback.format_exc()))


def run_writers(role: str, target: str, writers: int, duration: float,
                hosts: Sequence[str] = (), turns: bool = True) -> Sample:
    """``writers`` processes doing ``role`` on ``target`` for ``duration`` seconds at once
    (``hosts``: those the ``shared`` role claims on; ``turns``: whether claiming writers
    take turns on contended hosts, as they do by default)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    results: Queue[Any] = ctx.Queue()
    processes = [
        ctx.Process(target=_writer,
                    args=(role, target, tuple(hosts), duration, barrier, results, turns),
                    daemon=True)
        for _ in range(writers)
    ]
    for process in processes:
        process.start()
    try:
        reports = _collect(results, processes, time.monotonic() + TIMEOUT + duration)
    finally:
        for process in processes:
            process.join(5.0)
            if process.is_alive():
                process.terminate()
    errors = [str(r[2]) for r in reports if r[0] == "error"]
    if errors:
        raise RuntimeError(f"a bench writer ({role}) failed:\n" + "\n".join(errors))
    samples: list[Sample] = [r[2] for r in reports]
    starts = [float(r[1]) for r in reports]
    wall = max(s + x.seconds for s, x in zip(starts, samples, strict=True)) - min(starts)
    return merge(samples, wall)


def _collect(results: Queue[Any], processes: Sequence[BaseProcess],
             deadline: float) -> list[Any]:
    """Every writer's report; an error report for writers that died or ran out of time."""
    reports: list[Any] = []
    while len(reports) < len(processes):
        try:
            reports.append(results.get(timeout=0.5))
            continue
        except queue.Empty:
            pass
        gone = not any(p.is_alive() for p in processes)
        if gone or time.monotonic() > deadline:
            try:  # a writer may have reported just before it exited
                while len(reports) < len(processes):
                    reports.append(results.get(timeout=1.0))
            except queue.Empty:
                codes = [p.exitcode for p in processes]
                why = "exited" if gone else "timed out"
                reports.append(("error", 0.0, f"writer processes {why} (exit codes {codes})"))
                return reports
    return reports
