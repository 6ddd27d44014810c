"""File locks with a deadline: SQLite's writer lock and its turns (``sqlite.py``, ``turns.py``).

The kernel has no timed file lock: a lock is either tried (``LOCK_NB``, ``F_OFD_SETLK``) or
waited for without end (``LOCK_EX``, ``F_OFD_SETLKW``). A lock taken here is tried, then
tried again three times over about 350 us (a short wait ends there), and then waited for
in the kernel by a helper thread, on a duplicate of the caller's descriptor, while the
caller waits on the helper for at most the time left. Both kinds of lock belong to the
*open file description*, which the duplicate shares, so the lock the helper gets is the
caller's: the caller's own close lets go of it, as if the caller had taken it. A caller
that gives up marks the wait abandoned, and a helper that gets the lock after that lets go
of it at once.

A wait in the kernel wakes once, when the lock is let go. The wait polled before (a try
every 50 to 200 us, for as long as it took): with 8 writer processes on 10 shared hosts of
one SQLite file on a 2-core machine, each claim made 20 to 25 tries, which took CPU from
the holders they waited for. In the shape of the bench's "8 writer(s), shared hosts", three
rounds each side, interleaved in one run: 3.5 to 4.2 ms of CPU a claim and 413 to 500
claims/s polling; 3.1 to 3.3 ms and 468 to 508 claims/s now.
"""

from __future__ import annotations

import errno
import os
import queue
import struct
import threading
import time
from collections.abc import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

#: Linux's open-file-description locks (per description, not per process): turns need them.
OFD = fcntl is not None and hasattr(fcntl, "F_OFD_SETLK")


def lock_file(fd: int, deadline: float) -> bool:
    """Lock the whole file of ``fd`` exclusively (``flock``) before ``deadline``; False if
    it is still held by then."""
    return _take(fd, deadline, _try_file, _lock_file, _unlock_file)


def lock_byte(fd: int, slot: int, deadline: float) -> bool:
    """Lock the byte ``slot`` of ``fd``'s file exclusively (an OFD lock) before
    ``deadline``; False if it is still held by then. A deadline already past only tries."""
    return _take(fd, deadline, lambda f: _try_byte(f, slot), lambda f: _lock_byte(f, slot),
                 lambda f: _unlock_byte(f, slot))


#: A few tries first (the writer lock is held for one append, a few hundred us): a short
#: wait is over before a helper would have woken.
_SHORT_WAIT = (0.00005, 0.0001, 0.0002)


def _take(fd: int, deadline: float, try_: Callable[[int], bool],
          block: Callable[[int], None], unlock: Callable[[int], None]) -> bool:
    if try_(fd):
        return True
    for pause in _SHORT_WAIT:
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        if try_(fd):
            return True
    if time.monotonic() >= deadline:
        return False
    return _Wait(fd, block, unlock).until(deadline)


class _Wait:
    """One wait in the kernel, by a helper thread, for a caller with a deadline."""

    def __init__(self, fd: int, block: Callable[[int], None],
                 unlock: Callable[[int], None]) -> None:
        self._spare = os.dup(fd)  # the same open file description: its locks are the caller's
        self._block, self._unlock = block, unlock
        self._mutex = threading.Lock()
        self._ended = threading.Event()
        self._done = self._abandoned = False
        self._error: OSError | None = None

    def until(self, deadline: float) -> bool:
        """Wait for the lock until ``deadline``; True if it is held, False if abandoned."""
        _helpers.give(self)
        self._ended.wait(max(0.0, deadline - time.monotonic()))
        with self._mutex:
            if not self._done:
                self._abandoned = True
                return False
        if self._error is not None:
            raise self._error
        return True

    def run(self) -> None:
        """Wait for the lock (in a helper thread), and let go of it if the caller gave up."""
        try:
            try:
                self._block(self._spare)
            except OSError as err:
                self._error = err
            with self._mutex:
                self._done = True
                if self._abandoned and self._error is None:
                    self._unlock(self._spare)  # the caller went on without it
        finally:
            os.close(self._spare)  # the caller's descriptor keeps the description (and lock)
            self._ended.set()


class _Helpers:
    """The process's helper threads: each waits for one lock at a time and then for the
    next wait given; a wait given when none is idle starts another (starting a thread for
    each wait cost as much as the polling it replaced). A helper whose lock is never let go
    stays blocked; the others carry on."""

    def __init__(self) -> None:
        self._waits: queue.SimpleQueue[_Wait] = queue.SimpleQueue()
        self._mutex = threading.Lock()
        self._idle = 0

    def give(self, wait: _Wait) -> None:
        """Have ``wait`` run by an idle helper, or by a new one."""
        with self._mutex:
            start = not self._idle
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, name="ledger-file-lock", daemon=True).start()
        self._waits.put(wait)

    def _serve(self) -> None:
        while True:
            self._waits.get().run()
            with self._mutex:
                self._idle += 1


_helpers = _Helpers()
# a child process has none of its parent's threads: it starts with helpers of its own
os.register_at_fork(after_in_child=lambda: globals().update(_helpers=_Helpers()))


def _try_file(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock_file(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX)


def _unlock_file(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def _flock(kind: int, slot: int) -> bytes:
    """A ``struct flock`` for one byte at ``slot`` (Linux: l_type, l_whence, l_start,
    l_len, l_pid, padded to 32 bytes)."""
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, slot, 1, 0)


def _try_byte(fd: int, slot: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK, slot))
    except OSError as err:  # EAGAIN, or EACCES on some systems, for a held lock
        if err.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _lock_byte(fd: int, slot: int) -> None:
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _flock(fcntl.F_WRLCK, slot))


def _unlock_byte(fd: int, slot: int) -> None:
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_UNLCK, slot))
