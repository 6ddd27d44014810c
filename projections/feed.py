"""New ledger events as they are recorded, from the ``eventsourcing`` subscription.

On PostgreSQL the library's subscription listens for the event table's NOTIFY and pulls
what was recorded; the in-memory store notifies in-process. SQLite has no subscription:
:meth:`Feed.open` returns ``None`` and the runner polls. A thread drains the subscription
into a queue, so the runner can take what has arrived without blocking on the iterator.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, Notification

#: The most notifications held in the queue before the subscription waits for the runner.
QUEUE_SIZE = 20_000
#: How often (seconds) a wait for notifications looks at the stop event.
WAKE = 0.1


class Feed:
    """Notifications after ``gt``, in order, as they are recorded."""

    def __init__(self, subscription: Any) -> None:
        self._subscription = subscription
        self._queue: queue.Queue[Notification] = queue.Queue(maxsize=QUEUE_SIZE)
        self._closed = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="ledger-feed", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, recorder: ApplicationRecorder, gt: int) -> Feed | None:
        """Subscribe after position ``gt``; ``None`` when the store cannot (SQLite)."""
        try:
            subscription = recorder.subscribe(gt=gt)
        except NotImplementedError:
            return None
        return cls(subscription)

    @property
    def alive(self) -> bool:
        """False once the subscription has failed or been closed."""
        return self._thread.is_alive()

    def take(self, timeout: float, stop: threading.Event,
             limit: int = QUEUE_SIZE) -> list[Notification]:
        """What has arrived, waiting up to ``timeout`` seconds for the first (may be empty;
        ``stop`` ends the wait early)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                taken = [self._queue.get(timeout=min(WAKE, max(deadline - time.monotonic(), 0)))]
                break
            except queue.Empty:
                if stop.is_set() or time.monotonic() >= deadline:
                    return []
        while len(taken) < limit:
            try:
                taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return taken

    def close(self) -> None:
        """Stop the subscription and its threads."""
        self._closed.set()
        self._subscription.stop()
        self._thread.join(timeout=5)

    def _drain(self) -> None:
        try:
            with self._subscription as notifications:
                for notification in notifications:
                    while not self._closed.is_set():
                        try:
                            self._queue.put(notification, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if self._closed.is_set():
                        return
        except Exception as err:  # the runner notices (alive is False) and polls instead
            self.error = err
