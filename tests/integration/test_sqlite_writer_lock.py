"""SQLite appends queue on a lock file beside the database (``adapters.sqlite``)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from allocation_ledger import open_ledger
from allocation_ledger.adapters.sqlite import LOCK_SUFFIX, QueuedSQLiteApplicationRecorder
from tests.builders import a_host, an_instance


def test_an_append_waits_while_another_writer_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as ledger:
        recorder = ledger.store.recorder
        assert isinstance(recorder, QueuedSQLiteApplicationRecorder)
        assert recorder.lock_path == f"{path}{LOCK_SUFFIX}"
        host = a_host(ledger, vcpu=8)
        head = recorder.max_notification_id()
        fd = os.open(recorder.lock_path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer, mid-append
        claimed = threading.Event()
        claimer = threading.Thread(
            target=lambda: (an_instance(ledger, {host: {"VCPU": 1}}), claimed.set()))
        try:
            claimer.start()
            assert not claimed.wait(0.5)
            assert recorder.max_notification_id() == head  # nothing appended meanwhile
        finally:
            os.close(fd)  # the other writer commits
        claimer.join(10)
        assert claimed.is_set()
        assert ledger.provider(host).usages["VCPU"] == 1

