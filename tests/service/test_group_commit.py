"""Group commit: commands that arrive together from threads share one append, each decided
on the state the ones before it left, each caller answered on its own; a refused command
refuses only itself. Run on every store."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.application.command_ids import intent
from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.domain.errors import ConsumerGenerationConflict, InsufficientCapacity
from tests.builders import a_host, new_id


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    """A ledger whose threads' commands are group-committed, over a fresh store."""
    with open_ledger(url, group_commit=True) as opened:
        yield opened


def _commits(ledger: Ledger) -> GroupCommit:
    assert ledger.commits is not None, "group commit is on"
    return ledger.commits


def _held_up(ledger: Ledger, callers: list[Any]) -> list[Any]:
    """Run ``callers`` in threads while a first command holds the ledger's commit, so that
    they all queue, in the order given, and go out as one group; each caller's result or
    error, in order."""
    gate, leading = threading.Event(), threading.Event()

    def hold(_uow: object, _command: object) -> None:
        leading.set()
        gate.wait(30)

    with ThreadPoolExecutor(len(callers) + 1) as pool:
        first = pool.submit(_commits(ledger).run, hold, None, intent("hold", None, None))
        assert leading.wait(30)  # the first command leads, and waits at the gate
        futures = []
        for queued, call in enumerate(callers, 1):  # one at a time: the queue keeps order
            futures.append(pool.submit(call))
            deadline = time.monotonic() + 30
            while _commits(ledger).waiting < queued and time.monotonic() < deadline:
                time.sleep(0.001)
        gate.set()
        first.result()
        return [f.exception() or f.result() for f in futures]


def test_claims_that_arrive_together_share_one_append(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=10)
    before = ledger.provider(host).generation
    vms = [new_id() for _ in range(8)]

    found = _held_up(ledger, [
        (lambda vm=vm: ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p",
                                    user_id="u")) for vm in vms])

    assert [view.generation for view in found] == [1] * 8
    assert (_commits(ledger).appends, _commits(ledger).grouped) == (1, 8)
    provider = ledger.provider(host)
    assert (provider.usages["VCPU"], provider.generation) == (8, before + 8)
    assert all(ledger.consumer(vm).allocations == {host: {"VCPU": 1}} for vm in vms)


def test_a_refused_command_refuses_only_itself(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=4)
    small, big, other = new_id(), new_id(), new_id()
    taken = new_id()
    ledger.claim(taken, {host: {"VCPU": 1}}, None, project_id="p", user_id="u")

    def claim(vm: str, vcpu: int, generation: int | None = None) -> Any:
        return lambda: ledger.claim(vm, {host: {"VCPU": vcpu}}, generation, project_id="p",
                                    user_id="u")

    found = _held_up(ledger, [claim(small, 2), claim(big, 2), claim(taken, 1, 7),
                              claim(other, 1)])

    assert found[0].generation == 1 and found[3].generation == 1
    assert isinstance(found[1], InsufficientCapacity)  # 1 + 2 + 1 of 4: no room for 2 more
    assert isinstance(found[2], ConsumerGenerationConflict)
    assert (found[2].fields["expected"], found[2].fields["actual"]) == (7, 1)
    assert ledger.provider(host).usages["VCPU"] == 4
    assert ledger.consumer(big).generation is None
    assert _commits(ledger).grouped == 2


def test_a_store_error_while_admitting_a_command_still_answers_every_caller(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    from allocation_ledger.application import grouping

    host = a_host(ledger, vcpu=10)
    admits = grouping.Group.admits
    calls: list[int] = []

    def failing_once(self: grouping.Group, uow: Any) -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("lost while checking a cached copy")
        return admits(self, uow)

    monkeypatch.setattr(grouping.Group, "admits", failing_once)
    vms = [new_id() for _ in range(3)]
    found = _held_up(ledger, [
        (lambda vm=vm: ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p",
                                    user_id="u")) for vm in vms])

    assert [view.generation for view in found] == [1, 1, 1]  # the first ran alone
    assert ledger.provider(host).usages["VCPU"] == 3


def test_a_consumer_named_twice_in_a_group_is_written_by_each_in_turn(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=10)
    vm = new_id()

    found = _held_up(ledger, [
        lambda: ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p", user_id="u"),
        lambda: ledger.claim(vm, {host: {"VCPU": 3}}, 1, project_id="p", user_id="u"),
    ])

    assert [view.generation for view in found] == [1, 2]
    assert [view.allocations for view in found] == [{host: {"VCPU": 1}}, {host: {"VCPU": 3}}]
    assert ledger.provider(host).usages["VCPU"] == 3


@pytest.mark.parametrize("threads", [16])
def test_many_threads_never_oversubscribe_and_every_generation_is_exact(
    ledger: Ledger, threads: int,
) -> None:
    host = a_host(ledger, vcpu=50)
    vms = [new_id() for _ in range(80)]

    def claim(vm: str) -> int | None:
        try:
            return ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p",
                                user_id="u").generation
        except InsufficientCapacity:
            return None

    with ThreadPoolExecutor(threads) as pool:
        generations = list(pool.map(claim, vms))

    assert generations.count(1) == 50 and generations.count(None) == 30
    assert ledger.provider(host).usages["VCPU"] == 50
    holders = [vm for vm in vms if ledger.consumer(vm).generation == 1]
    assert len(holders) == 50



def test_every_caller_is_answered_once_however_the_threads_interleave(
        ledger: Ledger) -> None:
    """Threads switched as often as the interpreter can: a command handed the lead before
    its caller waits, or answered before it waits, is still answered exactly once."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        hosts = [a_host(ledger, vcpu=1000) for _ in range(3)]

        def claims(worker: int) -> list[int | None]:
            return [ledger.claim(new_id(), {hosts[(worker + n) % 3]: {"VCPU": 1}}, None,
                                 project_id="p", user_id="u").generation for n in range(15)]

        with ThreadPoolExecutor(12) as pool:
            found = [g for gs in pool.map(claims, range(12)) for g in gs]
    finally:
        sys.setswitchinterval(interval)
    assert found == [1] * 180
    assert sum(ledger.provider(h).usages["VCPU"] for h in hosts) == 180
    assert _commits(ledger).grouped <= 180


def test_commands_with_a_callers_id_run_alone_and_are_recorded(ledger: Ledger) -> None:
    """A caller's command id is checked against its own record: such a command never joins
    a group (it goes out while a group is held), appends its record with its events, and a
    retry replays it; the commands without one still share an append."""
    host = a_host(ledger, vcpu=10)
    with_ids, without = [new_id() for _ in range(3)], [new_id() for _ in range(3)]

    def claim(vm: str, command_id: str | None = None) -> Any:
        return ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p", user_id="u",
                            command_id=command_id)

    gate, leading = threading.Event(), threading.Event()

    def hold(_uow: object, _command: object) -> None:
        leading.set()
        gate.wait(30)

    with ThreadPoolExecutor(len(without) + 1) as pool:
        first = pool.submit(_commits(ledger).run, hold, None, intent("hold", None, None))
        assert leading.wait(30)
        alone = [claim(vm, f"cmd-{vm}") for vm in with_ids]  # while the group is held
        futures = []
        for queued, vm in enumerate(without, 1):
            futures.append(pool.submit(claim, vm))
            deadline = time.monotonic() + 30
            while _commits(ledger).waiting < queued and time.monotonic() < deadline:
                time.sleep(0.001)
        gate.set()
        first.result()
        grouped = [f.result() for f in futures]

    assert [v.generation for v in alone + grouped] == [1] * 6
    assert _commits(ledger).grouped == 3
    head = ledger.store.recorder.max_notification_id()
    for vm in with_ids:
        record = ledger.command(f"cmd-{vm}")
        assert record.applied and record.name == "claim"
        again = claim(vm, f"cmd-{vm}")
        assert again.replayed and again.generation == 1
    assert ledger.store.recorder.max_notification_id() == head  # replays append nothing
    assert ledger.provider(host).usages["VCPU"] == 6
