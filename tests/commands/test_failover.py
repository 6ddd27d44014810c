"""The failover trial: a primary with a synchronous streaming standby (two local clusters of
this test's own), writers with command ids on a multi-host URL, the primary stopped with
``-m immediate`` mid-load and the standby promoted. Nothing acknowledged is lost, nothing
is applied twice, the audit is clean on the promoted server, and projections resumed there
equal the ledger folded afresh."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.domain.errors import StoreUnavailable
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host, new_id
from tests.commands.clusters import Pair
from tests.commands.writer import claim_n
from tests.projections.expected import folded, stored

pytestmark = [pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.skipif(shutil.which("pg_createcluster") is None or os.geteuid() != 0,
                                 reason="needs Debian's pg_createcluster, run as root")]
WRITER = Path(__file__).with_name("writer.py")
ROOT = Path(__file__).parents[2]
TRIALS, WRITERS = 5, 3


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    clusters = Pair()
    clusters.create()
    try:
        yield clusters
    finally:
        clusters.remove()


def patiently(ledger: Ledger, within: float = 60.0) -> None:
    """Wait until the ledger reaches the (new) primary."""
    deadline = time.monotonic() + within
    while True:
        try:
            ledger.command("ping")
            return
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_failover_loses_no_acknowledged_command_and_applies_none_twice(pair: Pair) -> None:
    rng = random.Random(5)
    with open_ledger(pair.url()) as ledger:
        host = a_host(ledger, vcpu=1_000_000)
    interrupted: dict[str, int] = {}
    promoted_acks = 0  # commands the writers got done on the promoted server
    for trial in range(TRIALS):
        url = pair.url()
        with open_ledger(url) as ledger:
            read = ReadModels.of(ledger)
            read.resume()  # the read side's positions, replicated with the rest
            read.close()
        writers = {f"f{trial}-w{i}": new_id() for i in range(WRITERS)}
        procs = {prefix: subprocess.Popen(
            [sys.executable, str(WRITER), url, "persist", prefix, host, vm],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)}) for prefix, vm in writers.items()}
        time.sleep(rng.uniform(2.0, 3.0))  # start-up, then load
        failed_at = datetime.now(UTC)
        # once the promotion waits until the writers give up: they are told to retry
        pair.fail_over(promote_after=15.0 if trial == 2 else 0.0)
        time.sleep(6.0)  # the writers find the promoted server and go on
        for proc in procs.values():
            proc.send_signal(signal.SIGKILL)
        with open_ledger(pair.url()) as ledger:
            patiently(ledger)
            for prefix, vm in writers.items():
                out, err = procs[prefix].communicate(timeout=60)
                acked = int(out.split()[-1]) if out.split() else 0
                assert "Traceback" not in err, err  # only LedgerErrors reach the writer
                for line in err.split("\n"):  # "n ErrorName": told to retry command n
                    if line.strip():
                        kind = line.split()[-1]
                        interrupted[kind] = interrupted.get(kind, 0) + 1
                view = claim_n(ledger, prefix, host, vm, acked + 1)  # its last, again
                assert view.generation == acked + 1  # type: ignore[attr-defined]
                assert ledger.consumer(vm).generation == acked + 1  # none applied twice
                found = [ledger.command(f"{prefix}-{n}") for n in range(1, acked + 2)]
                assert all(c.applied for c in found)  # none lost
                promoted_acks += sum(c.time is not None and c.time > failed_at
                                     for c in found[:-1])
            report = audit(ledger.store)
            assert report.ok, report.findings
            read = ReadModels.of(ledger)
            read.resume()
            assert stored(read.engine) == folded(ledger)
            read.close()
        pair.rebuild_standby()
    print(f"failover: writers told to retry {interrupted}; acknowledged on the promoted "
          f"server {promoted_acks}")
    told = sum(interrupted.get(k, 0) for k in ("OutcomeUnknown", "StoreLost", "StoreUnavailable"))
    assert told > 0, "no writer was ever told the store was unavailable"
    assert promoted_acks > 0, "no writer went on on the promoted server"
