"""follow() stopped while its last batch is written, and that write fails: it returns
(the failure is logged), and the tables hold the batches before it."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from allocation_ledger import open_ledger
from allocation_ledger.projections.feed import Feed
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host, an_instance
from tests.projections.expected import folded, stored
from tests.projections.test_equivalence import another_store

pytestmark = pytest.mark.postgres


def test_follow_returns_when_stopped_and_its_last_write_failed(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger(pg_url) as ledger, another_store("postgres", tmp_path) as url, \
            ReadModels.of(ledger, url=url) as read:
        host = a_host(ledger, vcpu=64)
        stop, armed, in_take, written = (threading.Event() for _ in range(4))

        def progress(position: int, head: int) -> None:
            if armed.is_set():
                stop.set()          # SIGTERM arrives ...

        runner = read.runner(batch_size=1, progress=progress)
        runner.catch_up()
        real_write, calls = runner._write, []

        def write(batch):  # ... and the database goes away under the next batch
            calls.append(batch.position)
            if armed.is_set() and len(calls) > 1:
                raise OperationalError("COPY", {}, Exception("connection lost"))
            return real_write(batch)

        calls.clear()
        runner._write = write  # type: ignore[method-assign]
        real_take = Feed.take

        def take(self, timeout, stop_, limit=20_000):
            if not in_take.is_set():
                in_take.set()
                written.wait(10)
                time.sleep(0.5)
                return real_take(self, timeout, stop_, limit=6)  # 3 commands of 5
            return real_take(self, timeout, stop_, limit)

        monkeypatch.setattr(Feed, "take", take)
        failures: list[BaseException] = []

        def run() -> None:
            try:
                runner.follow(stop, 0.05)
            except BaseException as err:
                failures.append(err)

        thread = threading.Thread(target=run)
        thread.start()
        assert in_take.wait(10)
        for _ in range(5):
            an_instance(ledger, {host: {"VCPU": 1}})
        armed.set()
        written.set()
        thread.join(30)
        assert not thread.is_alive()
        assert failures == []
        read.resume()  # the next run picks up where the tables stop
        assert stored(read.engine) == folded(ledger)
