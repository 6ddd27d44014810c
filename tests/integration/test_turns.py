"""Writers to a contended host take turns (``adapters/turns.py``): a writer waits for the
one holding the host, then decides on what it wrote, instead of clashing; a turn is let go
when its attempt ends however it ends, and when its process dies; a turn never held forever
stops anybody. Two ledgers on one store stand for two writer processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any
from uuid import UUID

import psycopg
import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.turns import stream_key
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.domain.errors import InsufficientCapacity
from allocation_ledger.domain.ids import provider_stream_id
from tests.builders import a_host, new_id


def _appends(ledger: Ledger) -> list[int]:
    """Count the appends the ledger's recorder is asked for (refused ones too)."""
    calls: list[int] = []
    original = ledger.store.recorder.insert_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    ledger.store.recorder.insert_events = counted  # type: ignore[method-assign]
    return calls


def _claim(ledger: Ledger, host: str, vcpu: int = 1) -> int | None:
    return ledger.claim(new_id(), {host: {"VCPU": vcpu}}, None, project_id="p",
                        user_id="u").generation


def _in_thread(work: Any) -> tuple[threading.Thread, threading.Event, list[BaseException]]:
    done, errors = threading.Event(), []

    def run() -> None:
        try:
            work()
        except BaseException as err:  # reported to the test
            errors.append(err)
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, errors


def _waits_for_their_turn(mine: Ledger, theirs: Ledger, host: str,
                          while_waiting: Any = lambda: None) -> None:
    """My claim on ``host`` waits while they hold it (``while_waiting`` runs then), and,
    once their append has ended their turn, decides on what they wrote: one append."""
    appends = _appends(mine)
    assert theirs.store.take_turn(provider_stream_id(host), wait=True)  # mid-attempt
    thread, done, errors = _in_thread(lambda: _claim(mine, host))
    try:
        assert not done.wait(0.5)  # I wait for their turn to end
        assert appends == []
        while_waiting()
        _claim(theirs, host)  # their append ends their turn: my copy is now stale
    finally:
        theirs.store.end_turns()
    thread.join(30)
    assert done.is_set() and not errors, errors
    assert appends == [1]  # decided on the fresh host: appended once, no clash
    assert mine.provider(host).usages["VCPU"] == 3


def test_a_writer_waits_for_the_host_another_holds_and_decides_on_what_it_wrote(
        durable_url: str) -> None:
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)  # my cache holds the host
        mine.policy.clashed([host])  # as after a clash: the host is contended
        _waits_for_their_turn(mine, theirs, host)


def test_a_turn_is_let_go_when_the_attempt_ends_committed_or_refused(
        durable_url: str) -> None:
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        host = a_host(mine, vcpu=4)
        stream = provider_stream_id(host)
        mine.policy.clashed([host])
        _claim(mine, host)
        assert theirs.store.take_turn(stream, wait=False)  # free again
        theirs.store.end_turns()

        with pytest.raises(InsufficientCapacity):
            _claim(mine, host, vcpu=10)
        assert theirs.store.take_turn(stream, wait=False)
        theirs.store.end_turns()


def test_without_contention_or_with_turns_off_nothing_is_held(durable_url: str) -> None:
    policy = WritePolicy(takes_turns=False)
    with open_ledger(durable_url, policy=policy) as mine, open_ledger(durable_url) as theirs:
        host = a_host(mine, vcpu=100)
        other = a_host(mine, vcpu=100)
        mine.policy.clashed([host])
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)
        assert theirs.store.take_turn(provider_stream_id(other), wait=True)
        try:
            began = time.monotonic()
            _claim(mine, host)  # turns off: not held up by theirs (it would wait 10-30 s)
            assert time.monotonic() - began < 5
        finally:
            theirs.store.end_turns()
    if durable_url.startswith("sqlite"):
        return  # a writer there sees their turn before it appends (the test below)
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        host = a_host(mine, vcpu=100)
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)
        try:
            began = time.monotonic()
            _claim(mine, host)  # never clashed on: not contended, not held up
            assert time.monotonic() - began < 5
        finally:
            theirs.store.end_turns()


def test_a_writer_that_never_clashed_lets_the_turn_holder_go_first(tmp_path: Any) -> None:
    """SQLite: a writer about to append to a host another holds a turn on (one that
    clashed there) lets it go first and waits for the turn, though it never clashed there
    itself; else, writing to the host again and again, it could leave the other clashing
    on every attempt (two writer processes on one host, turns on: one of them gave up with
    ConcurrentUpdate in 2 of twelve 0.5 s runs)."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as mine, open_ledger(url) as theirs:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)  # my cache holds the host: my next claim reads nothing
        assert not mine.policy.contended(host)

        def taking_turns_from_now_on() -> None:
            assert mine.policy.contended(host)

        _waits_for_their_turn(mine, theirs, host, taking_turns_from_now_on)


def test_a_second_turn_is_taken_only_if_free_so_writers_never_wait_in_a_circle(
        durable_url: str) -> None:
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        first, second = a_host(mine), a_host(mine)
        a, b = provider_stream_id(first), provider_stream_id(second)
        assert theirs.store.take_turn(b, wait=True)
        try:
            assert mine.store.take_turn(a, wait=True)
            assert not mine.store.take_turn(b, wait=False)  # held: not waited for
            assert mine.store.take_turn(a, wait=False)  # already mine
        finally:
            mine.store.end_turns()
            theirs.store.end_turns()
        assert theirs.store.take_turn(a, wait=False)
        theirs.store.end_turns()


@pytest.mark.postgres
def test_a_turn_held_too_long_is_given_up_and_the_store_still_decides(pg_url: str) -> None:
    url = pg_url + "&lock_timeout=1"
    with open_ledger(url) as mine, open_ledger(url) as theirs, open_ledger(url) as other:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        mine.policy.clashed([host])
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)  # and hangs
        try:
            _claim(other, host)  # a writer that takes no turn: my copy is stale
            began = time.monotonic()
            _claim(mine, host)  # waits a second, then goes on without the turn
            assert 0.9 < time.monotonic() - began < 10
            began = time.monotonic()
            _claim(mine, host)  # and does not wait for it again a while
            assert time.monotonic() - began < 0.9
        finally:
            theirs.store.end_turns()
        assert mine.provider(host).usages["VCPU"] == 4


@pytest.mark.postgres
def test_a_writer_holds_no_lock_once_its_claims_are_done(pg_url: str) -> None:
    with open_ledger(pg_url) as mine:
        host = a_host(mine, vcpu=100)
        mine.policy.clashed([host])
        key = stream_key(provider_stream_id(host)) & (2 ** 64 - 1)
        for _ in range(3):
            _claim(mine, host)
        with psycopg.connect(pg_url.split("?", maxsplit=1)[0], autocommit=True) as admin:
            held = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
                "AND objid = %s AND objsubid = 1", (key >> 32, key & 0xFFFFFFFF)).fetchone()
        assert held == (0,)
        assert mine.provider(host).usages["VCPU"] == 3


HOLDER = """
import sys, time, uuid
from allocation_ledger import open_ledger
ledger = open_ledger(sys.argv[1])
assert ledger.store.take_turn(uuid.UUID(sys.argv[2]), wait=True)
print("held", flush=True)
time.sleep(600)
"""


def test_a_turn_dies_with_its_process(durable_url: str) -> None:
    with open_ledger(durable_url) as mine:
        host = a_host(mine, vcpu=100)
        stream = provider_stream_id(host)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, durable_url, str(stream)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            assert not mine.store.take_turn(stream, wait=False)
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(10)
            deadline = time.monotonic() + 10
            while not mine.store.take_turn(stream, wait=False):
                assert time.monotonic() < deadline, "the dead process's turn was never let go"
                time.sleep(0.05)
            mine.store.end_turns()
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()


def test_stream_keys_spread_over_64_bits() -> None:
    assert stream_key(UUID(int=0)) == 0
    assert stream_key(UUID("ffffffff-ffff-ffff-0000-000000000000")) == -1
    assert stream_key(UUID("7fffffff-ffff-ffff-ffff-ffffffffffff")) == 2 ** 63 - 1


def test_a_failure_after_a_turn_is_taken_lets_go_of_it(
        durable_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger(durable_url) as setup:
        host = a_host(setup, vcpu=100)
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        mine.policy.clashed([host])  # contended, and not cached here: taken, then read
        stream = provider_stream_id(host)
        reads = mine.store.get

        def lost(*args: Any, **kwargs: Any) -> Any:
            if args and args[0] == stream:
                raise RuntimeError("the read failed after the turn was taken")
            return reads(*args, **kwargs)

        monkeypatch.setattr(mine.store, "get", lost)
        with pytest.raises(Exception, match="after the turn was taken"):
            _claim(mine, host)
        assert theirs.store.take_turn(stream, wait=False)  # let go of
        theirs.store.end_turns()
        monkeypatch.setattr(mine.store, "get", reads)
        _claim(mine, host)
        assert mine.provider(host).usages["VCPU"] == 1


@pytest.mark.postgres
def test_a_broken_connection_holding_a_turn_is_let_go_and_the_thread_goes_on(
        pg_url: str) -> None:
    with open_ledger(pg_url) as mine:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        turns: Any = mine.store.recorder.turns
        assert mine.store.take_turn(provider_stream_id(host), wait=True)
        pid = turns._local.conn.info.backend_pid
        with psycopg.connect(pg_url.split("?", maxsplit=1)[0], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        _claim(mine, host)  # this thread's reads and append go back to the pool
        assert not turns.holding()
        assert mine.provider(host).usages["VCPU"] == 2


@pytest.mark.postgres
def test_threads_of_one_process_wait_for_a_turn_without_taking_the_pool(pg_url: str) -> None:
    with open_ledger(pg_url + "&pool_size=1&max_overflow=1") as mine:
        host = a_host(mine, vcpu=100)
        stream = provider_stream_id(host)
        assert mine.store.take_turn(stream, wait=True)  # this thread holds one connection
        try:
            waiters = [_in_thread(lambda: (mine.store.take_turn(stream, wait=True),
                                           mine.store.end_turns())) for _ in range(2)]
            time.sleep(0.3)
            assert not any(done.is_set() for _, done, _ in waiters)
            _, read, errors = _in_thread(lambda: mine.provider(host))
            assert read.wait(5), "a plain read found no connection: the waiters took them"
            assert not errors, errors
        finally:
            mine.store.end_turns()
        for thread, done, errors in waiters:
            thread.join(30)
            assert done.is_set() and not errors, errors


def test_a_question_the_system_refuses_is_no_turn_held(tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking whether another writer holds a host is best effort: a file that cannot be
    opened (no descriptor left, say) is answered with none, and the claim appends."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as mine, open_ledger(url) as theirs:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)
        try:
            turns_file = mine.store.recorder.turns.path
            real_open = os.open

            def refused(path: str, *args: Any, **kwargs: Any) -> int:
                if path == turns_file:
                    raise OSError(24, "Too many open files")
                return real_open(path, *args, **kwargs)

            monkeypatch.setattr(os, "open", refused)
            stream = provider_stream_id(host)
            assert mine.store.turns_held_elsewhere([stream]) == []
            monkeypatch.undo()
            assert mine.store.turns_held_elsewhere([stream]) == [stream]
        finally:
            theirs.store.end_turns()


def test_a_writer_with_one_attempt_does_not_yield(tmp_path: Any) -> None:
    """Yielding costs an attempt: a command allowed only one appends at once."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url, policy=WritePolicy(max_attempts=1)) as mine, \
            open_ledger(url) as theirs:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)
        try:
            assert _claim(mine, host) is not None  # not ConcurrentUpdate
        finally:
            theirs.store.end_turns()


def test_a_hung_holder_holds_up_a_writer_that_yields_briefly_and_once(
        tmp_path: Any) -> None:
    """A writer that yields to a holder that never lets go waits for it at most
    YIELD_WAIT seconds (not the store's lock timeout), then appends without the turn; and
    does not yield on that host again for a while."""
    from allocation_ledger.adapters.turns import YIELD_WAIT

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as mine, open_ledger(url) as theirs:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        assert theirs.store.take_turn(provider_stream_id(host), wait=True)  # and hangs
        try:
            began = time.monotonic()
            _claim(mine, host)
            waited = time.monotonic() - began
            assert YIELD_WAIT * 0.9 <= waited < YIELD_WAIT + 5, waited
            assert not mine.policy.yields_to(host)
            began = time.monotonic()
            _claim(mine, host)  # no second wait
            assert time.monotonic() - began < YIELD_WAIT * 0.5
        finally:
            theirs.store.end_turns()
        assert mine.provider(host).usages["VCPU"] == 3
