"""SQLite's writer lock and turns as kernel waits (``adapters/turns.py``, ``FileLocks``):
a waiter sleeps until the lock is let go instead of polling, gives up at its deadline and
then holds nothing (a lock got late for it is let go at once), a key has at most one helper
thread however often its waits are given up, threads of one process queue, two writers that
each wait for the other's lock end locked by neither, and a forked child holds none of its
parent's locks."""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from pathlib import Path

import pytest

from allocation_ledger.adapters import turns
from allocation_ledger.adapters.turns import FileLocks

pytestmark = pytest.mark.skipif(not turns._OFD, reason="needs Linux OFD locks")


@pytest.fixture
def locks(tmp_path: Path) -> FileLocks:
    return FileLocks(str(tmp_path / "ledger.db-turns.lock"))


def helpers() -> int:
    return sum(t.name == "ledger-file-lock" for t in threading.enumerate())


def free(locks: FileLocks, key: int | None) -> bool:
    """True when a description of its own gets ``key`` at once (let go again)."""
    fd = locks.take(key, 0)
    if fd is None:
        return False
    locks.release(fd)
    return True


def eventually(check: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "did not happen in time"
        time.sleep(0.01)


@pytest.mark.parametrize("key", [None, 7])
def test_a_waiter_sleeps_until_the_lock_is_let_go(locks: FileLocks, key: int | None) -> None:
    held = locks.take(key, 0)
    assert held is not None
    got: list[tuple[int | None, float, float]] = []

    def wait() -> None:
        cpu, began = time.thread_time(), time.monotonic()
        fd = locks.take(key, 10)
        got.append((fd, time.monotonic() - began, time.thread_time() - cpu))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)
    assert not got  # still waiting
    locks.release(held)
    waiter.join(5)
    [(fd, waited, cpu)] = got
    assert fd is not None and 0.9 < waited < 3
    # a second asleep costs next to nothing; polling every 200 us costs tens of ms
    assert cpu < 0.01, f"the waiter burnt {cpu * 1000:.1f} ms of CPU"
    assert not free(locks, key)
    locks.release(fd)
    assert free(locks, key)


def test_a_wait_given_up_holds_nothing_and_a_late_lock_is_let_go(locks: FileLocks) -> None:
    fds_before = len(os.listdir("/proc/self/fd"))
    held = locks.take(3, 0)
    assert held is not None
    began = time.monotonic()
    assert locks.take(3, 0.2) is None
    assert 0.15 < time.monotonic() - began < 2
    locks.release(held)  # the helper gets it now, for nobody: it lets go
    eventually(lambda: free(locks, 3))
    eventually(lambda: helpers() == 0)
    assert len(os.listdir("/proc/self/fd")) == fds_before


def test_a_key_has_one_helper_however_often_its_waits_are_given_up(locks: FileLocks) -> None:
    held = locks.take(5, 0)
    assert held is not None
    for _ in range(30):
        assert locks.take(5, 0.01) is None
    assert helpers() == 1
    other = locks.take(6, 0)  # another key is not held up
    assert other is not None
    locks.release(other)
    locks.release(held)
    fd = locks.take(5, 5)  # and a later waiter still gets it from that one helper
    assert fd is not None
    locks.release(fd)
    eventually(lambda: helpers() == 0)


def test_threads_of_one_process_queue(locks: FileLocks) -> None:
    inside, most, taken = [0], [0], []
    mutex = threading.Lock()

    def work() -> None:
        for _ in range(10):
            fd = locks.take(None, 10)
            assert fd is not None
            with mutex:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.002)
            with mutex:
                inside[0] -= 1
            taken.append(fd)
            locks.release(fd)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(taken) == 40 and most[0] == 1


def test_two_writers_waiting_for_each_other_end_locked_by_neither(locks: FileLocks) -> None:
    def writer(mine: int, theirs: int, ready: threading.Barrier) -> None:
        fd = locks.take(mine, 0)
        assert fd is not None
        ready.wait()
        assert locks.take(theirs, 0.3) is None  # the other holds it all along
        ready.wait()
        locks.release(fd)

    ready = threading.Barrier(2)
    threads = [threading.Thread(target=writer, args=(1, 2, ready)),
               threading.Thread(target=writer, args=(2, 1, ready))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    eventually(lambda: free(locks, 1) and free(locks, 2))
    eventually(lambda: helpers() == 0)


def test_a_forked_child_holds_none_of_its_parents_locks(locks: FileLocks) -> None:
    held = locks.take(9, 0)
    assert held is not None
    waiting: list[int | None] = []
    waiter = threading.Thread(target=lambda: waiting.append(locks.take(9, 10)))
    waiter.start()
    eventually(lambda: helpers() == 1)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's answer goes through the pipe
        try:
            fd = locks.take(9, 5)  # a helper of its own, once the parent's holders let go
            os.write(write, b"got" if fd is not None else b"none")
        finally:
            os._exit(0)
    os.close(write)
    time.sleep(0.3)
    locks.release(held)  # the parent's waiter gets it, then lets go: the child's turn
    waiter.join(5)
    assert waiting and waiting[0] is not None
    locks.release(waiting[0])
    ready, _, _ = select.select([read], [], [], 20)
    answer = os.read(read, 10) if ready else b"no answer"
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    os.close(read)
    assert answer == b"got"
    assert free(locks, 9)
