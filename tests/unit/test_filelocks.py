"""File locks with a deadline (``adapters.filelocks``): waited for in the kernel by a helper
thread, yet the caller's, and let go when the caller gave up."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from allocation_ledger.adapters import filelocks
from allocation_ledger.adapters.filelocks import lock_byte, lock_file

pytestmark = pytest.mark.skipif(not filelocks.OFD, reason="needs Linux OFD locks")

SLOT = 12345

Take = Callable[[int, float], bool]
KINDS: dict[str, Take] = {
    "whole file": lock_file,
    "one byte": lambda fd, deadline: lock_byte(fd, SLOT, deadline),
}


@pytest.fixture(params=list(KINDS))
def take(request: pytest.FixtureRequest) -> Take:
    return KINDS[request.param]


@pytest.fixture
def opener(tmp_path: Path) -> Iterator[Callable[[], int]]:
    """Opens the lock file anew: each open is a lock holder of its own."""
    opened: list[int] = []

    def open_one() -> int:
        fd = os.open(tmp_path / "x.lock", os.O_RDWR | os.O_CREAT, 0o600)
        opened.append(fd)
        return fd

    yield open_one
    for fd in opened:
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


def soon(seconds: float) -> float:
    return time.monotonic() + seconds


def test_a_free_lock_is_taken_and_held_until_its_holder_closes(
        take: Take, opener: Callable[[], int]) -> None:
    holder, other = opener(), opener()
    assert take(holder, soon(1))
    assert not take(other, time.monotonic())  # a deadline past only tries
    os.close(holder)
    assert take(other, time.monotonic())


def test_a_waiter_gets_the_lock_when_it_is_let_go_and_holds_it_itself(
        take: Take, opener: Callable[[], int]) -> None:
    holder, waiter, third = opener(), opener(), opener()
    assert take(holder, soon(1))
    threading.Timer(0.3, os.close, (holder,)).start()
    started = time.monotonic()
    assert take(waiter, soon(10))
    assert 0.2 < time.monotonic() - started < 5
    # the helper's descriptor is gone, the lock is still the waiter's, until it closes
    assert not take(third, time.monotonic())
    os.close(waiter)
    assert take(third, time.monotonic())


def test_a_wait_given_up_leaves_no_lock_behind(take: Take,
                                               opener: Callable[[], int]) -> None:
    holder, quitter, third = opener(), opener(), opener()
    assert take(holder, soon(1))
    started = time.monotonic()
    assert not take(quitter, soon(0.3))
    assert 0.25 < time.monotonic() - started < 5
    os.close(holder)  # the helper gets it now, for a caller that went on without it
    time.sleep(0.3)  # (before the third could take it first)
    deadline = soon(5)
    while not take(third, time.monotonic()):  # so it lets go of it at once
        assert time.monotonic() < deadline, "the abandoned wait kept the lock"
        time.sleep(0.01)
    # and the quitter, still open, holds nothing
    assert not take(quitter, time.monotonic())


def test_threads_wait_for_different_locks_at_once(opener: Callable[[], int]) -> None:
    holders = [opener() for _ in range(3)]
    for slot, fd in enumerate(holders):
        assert lock_byte(fd, slot, time.monotonic())
    got: list[int] = []
    waiters = [threading.Thread(target=lambda s=slot: got.append(s) if lock_byte(
        opener(), s, soon(10)) else None) for slot in range(3)]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.2)
    for fd in reversed(holders):
        os.close(fd)
    for waiter in waiters:
        waiter.join(10)
    assert sorted(got) == [0, 1, 2]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_waits_with_helpers_of_its_own(opener: Callable[[], int]) -> None:
    holder = opener()
    assert lock_file(holder, time.monotonic())
    assert not lock_file(opener(), soon(0.1))  # the parent has a helper thread now
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(reader)
            os.close(holder)  # the parent's description: only the parent's close lets go
            got = lock_file(opener(), soon(10))
            os.write(writer, b"1" if got else b"0")
        finally:
            os._exit(0)
    os.close(writer)
    time.sleep(0.3)
    os.close(holder)
    answer = os.read(reader, 1)
    os.close(reader)
    os.waitpid(pid, 0)
    assert answer == b"1"
