"""Racing and killed writers with command ids on PostgreSQL: exactly one call applies a
command, every other call of it gets the same outcome, and a writer killed mid-command
retries its last command with the same id and it lands exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.domain.errors import LedgerError
from tests.builders import PROJECT, USER, a_host, new_id
from tests.commands.writer import claim_n
from tests.stores import postgres_schema_url

pytestmark = pytest.mark.postgres
WRITER = Path(__file__).with_name("writer.py")
ROOT = Path(__file__).parents[2]


@pytest.fixture
def pg() -> Iterator[tuple[Ledger, str]]:
    with postgres_schema_url() as url, open_ledger(url) as ledger:
        yield ledger, url


def test_threads_racing_with_one_command_id_apply_it_once(pg: tuple[Ledger, str]) -> None:
    ledger, _ = pg
    for _ in range(5):
        host, vm, cid = a_host(ledger), new_id(), new_id()
        barrier = threading.Barrier(8)
        results: list[object] = []

        def call(host: str = host, vm: str = vm, cid: str = cid,
                 barrier: threading.Barrier = barrier, results: list[object] = results
                 ) -> None:
            barrier.wait()
            try:
                results.append(ledger.claim(vm, {host: {"VCPU": 2}}, None,
                                            project_id=PROJECT, user_id=USER, command_id=cid))
            except LedgerError as err:
                results.append(err)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert all(not isinstance(r, Exception) for r in results), results
        assert sorted(r.replayed for r in results) == [False] + [True] * 7  # type: ignore[attr-defined]
        assert {r.generation for r in results} == {1}  # type: ignore[attr-defined]
        assert ledger.provider(host).usages["VCPU"] == 2
        assert ledger.command(cid).events == 2


def test_processes_racing_with_one_command_id_apply_it_once(pg: tuple[Ledger, str]) -> None:
    ledger, url = pg
    for _ in range(3):
        host, vm, cid = a_host(ledger), new_id(), new_id()
        start_at = time.time() + 3.0  # time for every interpreter to start and connect
        procs = [subprocess.Popen([sys.executable, str(WRITER), url, "race", cid, host, vm,
                                   str(start_at)], stdout=subprocess.PIPE, text=True,
                                  cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
                 for _ in range(4)]
        outcomes = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
        assert all("error" not in o for o in outcomes), outcomes
        assert sorted(o["replayed"] for o in outcomes) == [False, True, True, True]
        assert {o["generation"] for o in outcomes} == {1}
        assert ledger.provider(host).usages["VCPU"] == 2


@pytest.mark.parametrize("trials", [
    pytest.param(3, id="3-trials"),
    pytest.param(20, id="20-trials", marks=pytest.mark.slow),  # the long trial: --slow
])
def test_writers_killed_mid_command_retry_their_last_command_exactly_once(
        pg: tuple[Ledger, str], trials: int) -> None:
    ledger, url = pg
    rng = random.Random(11)
    host = a_host(ledger, vcpu=10_000)
    retried_done = 0
    for trial in range(trials):
        writers = {f"t{trial}-w{i}": new_id() for i in range(3)}
        procs = {prefix: subprocess.Popen(
            [sys.executable, str(WRITER), url, "loop", prefix, host, vm],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)}) for prefix, vm in writers.items()}
        time.sleep(rng.uniform(1.2, 2.5))  # start-up, then a random moment of the loop
        for proc in procs.values():
            proc.send_signal(signal.SIGKILL)
        for prefix, vm in writers.items():
            out = procs[prefix].communicate(timeout=60)[0].split()
            acked = int(out[-1]) if out else 0  # what the client believes done
            view = claim_n(ledger, prefix, host, vm, acked + 1)  # retry the last one sent
            retried_done += 1
            assert view.generation == acked + 1  # type: ignore[attr-defined]
            assert ledger.consumer(vm).generation == acked + 1
            assert all(ledger.command(f"{prefix}-{n}").applied for n in range(1, acked + 2))
            assert not ledger.command(f"{prefix}-{acked + 2}").applied
    assert retried_done == 3 * trials
    report = audit(ledger.store)
    assert report.ok, report.findings
