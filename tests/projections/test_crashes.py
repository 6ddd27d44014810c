"""Crashes, with real processes and SIGKILL.

- A projection process killed at random moments of a catch-up of a large ledger leaves
  every projection at the end of a command, and a restarted process resumes from there to
  tables equal to a rebuild from zero.
- A writer killed mid-command leaves no part of that command in the ledger, nor in the
  projections a follower process keeps meanwhile; the follower stops cleanly on SIGTERM.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.projections.readmodels import ReadModels, ledger_position
from benchmarks.rebuild import copy_events
from tests.invariants import assert_invariants
from tests.projections.conftest import LargeLedger
from tests.projections.expected import differences, folded, stored
from tests.projections.processes import kill_hard, start_script, start_writer, wait_until
from tests.stores import postgres_schema_url

KILLS = {"postgres": 20, "sqlite": 6}
SHORT_KILLS = 1  # the default run's version: a killed catch-up (and its restart, if killed too)


@contextmanager
def copy_of(large: LargeLedger, kind: str, tmp_path: Path) -> Iterator[str]:
    """The large ledger, copied into a fresh store of ``kind``."""
    if kind == "sqlite":
        target = tmp_path / "copy.db"
        with closing(sqlite3.connect(large.path)) as source, \
                closing(sqlite3.connect(target)) as copy:
            source.backup(copy)
        yield f"sqlite:///{target}"
        return
    with postgres_schema_url() as base:
        url = base + "&pool_size=2"
        with open_ledger(large.url) as source, open_ledger(url) as copy_:
            copy_events(source.store, copy_.store)
        yield url


def catching_up(read: ReadModels, before: dict[str, int], head: int) -> bool:
    """True once a run has committed a batch and is not done yet."""
    positions = read.positions()
    return positions != before and 0 < min(positions.values()) < head


def running_or_done(run: subprocess.Popen[str], read: ReadModels, before: dict[str, int],
                    head: int) -> bool:
    """True once ``run`` is catching up (or has ended)."""
    return run.poll() is not None or catching_up(read, before, head)


def kill_mid_catch_up(action: str, url: str, read: ReadModels, large: LargeLedger,
                      rng: random.Random) -> bool:
    """Start a ``rebuild`` or ``resume`` process and SIGKILL it at a random moment of its
    catch-up; ``False`` if it finished first. Either way every projection is left at the
    end of a command."""
    before = read.positions()
    run = start_script("rebuild_projections.py", "--url", url, "--batch-size", "40",
                       "--quiet", *(["--resume"] if action == "resume" else []))
    wait_until(partial(running_or_done, run, read, before, large.head), 60)
    time.sleep(rng.uniform(0, 0.3))
    if run.poll() is None:
        kill_hard(run)
    else:
        assert run.communicate()[1] == "" and run.returncode == 0
    positions = read.positions()
    assert set(positions.values()) <= large.command_ends | {0}, "stopped inside a command"
    return min(positions.values()) < large.head


@pytest.mark.parametrize("trial", [
    pytest.param("short", id="short"),
    pytest.param("long", id="long", marks=pytest.mark.slow),   # the long trial: --slow
])
@pytest.mark.parametrize("kind", [pytest.param("postgres", marks=pytest.mark.postgres),
                                  "sqlite"])
def test_killed_catch_ups_resume_to_a_rebuild_from_zero(
        kind: str, trial: str, large_ledger: LargeLedger, tmp_path: Path) -> None:
    rng = random.Random(20240)
    with copy_of(large_ledger, kind, tmp_path) as url, open_ledger(url) as ledger, \
            ReadModels.of(ledger) as read:
        read.rebuild()
        reference = stored(read.engine, everything=True)
        assert stored(read.engine) == folded(ledger)
        wanted = KILLS[kind] if trial == "long" else SHORT_KILLS
        kills = rounds = 0
        while kills < wanted:
            rounds += 1
            assert rounds <= wanted, "the catch-ups end before they can be killed"
            # A run from zero killed, then its restart killed too (when it is not done).
            for action in ("rebuild", "resume"):
                kills += kill_mid_catch_up(action, url, read, large_ledger, rng)
            report = read.resume(batch_size=200)  # the last restart, to the end
            assert report.positions == dict.fromkeys(report.positions, large_ledger.head)
            assert stored(read.engine, everything=True) == reference


def transaction_ends(url: str) -> set[int]:
    """The positions where one of the ledger's transactions ended (PostgreSQL's ``xmin``):
    an independent witness of where each command's events end."""
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(urlunsplit((*parts[:3], "", ""))) as conn:
        rows = conn.execute(
            f'SELECT notification_id, xmin::text FROM "{schema}".ledger_events '
            "ORDER BY notification_id").fetchall()
    after = [*rows[1:], (0, "")]
    return {position for (position, xid), (_, next_xid) in zip(rows, after, strict=True)
            if next_xid != xid} | {0}


def command_ends(ledger: Ledger) -> set[int]:
    """The positions where a command's events end, by the ``command_id`` each carries;
    ``AssertionError`` if one command's events are not one contiguous run."""
    ids = [(n.id, ledger.store.mapper.to_domain_event(n).request["command_id"])  # type: ignore[attr-defined]
           for n in ledger.store.recorder.select_notifications(1, 10**7)]
    runs = [command for i, (_, command) in enumerate(ids) if i == 0 or ids[i - 1][1] != command]
    assert len(runs) == len(set(runs)), "a command's events are split apart"
    after = [*ids[1:], (0, "")]
    return {p for (p, command), (_, next_command) in zip(ids, after, strict=True)
            if next_command != command} | {0}


@pytest.mark.parametrize("writers", [
    pytest.param(2, id="2-writers"),
    pytest.param(5, id="5-writers", marks=pytest.mark.slow),   # the long trial: --slow
])
@pytest.mark.postgres
def test_a_writer_killed_mid_command_leaves_nothing_partial(pg_url: str, writers: int) -> None:
    rng = random.Random(777)
    url = pg_url + "&pool_size=2"
    observed: set[int] = set()
    with open_ledger(url) as ledger, ReadModels.of(ledger) as read:
        follower = start_script("run_projections.py", "--url", url, "--poll-interval", "0.1",
                                "--batch-size", "15")
        try:
            for seed in range(writers):
                start = ledger_position(ledger)
                writer = start_writer(url, seed, 100_000)
                # On a loaded machine a writer may take longer than the deadline to start:
                # kill it only once it writes, so every round kills a writer mid-flight.
                assert wait_until(partial(lambda seen: ledger_position(ledger) > seen, start),
                                  120, every=0.05)
                deadline = time.monotonic() + 0.9 + rng.uniform(0.3, 1.5)
                while time.monotonic() < deadline:
                    observed.update(read.positions().values())
                    time.sleep(0.02)
                assert writer.poll() is None, writer.communicate()
                kill_hard(writer)
            read.wait(ledger_position(ledger), timeout=60)
        finally:
            follower.terminate()
            _, err = follower.communicate(timeout=30)
        assert follower.returncode == 0, err
        assert "stopped at" in err
        assert_invariants(ledger)
        assert command_ends(ledger) == transaction_ends(url)  # one command, one append
        assert observed <= transaction_ends(url), "a projection showed part of a command"
        assert len(observed) > 10
        found, wanted = stored(read.engine), folded(ledger)
        assert found == wanted, differences(found, wanted)
