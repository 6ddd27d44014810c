"""A long randomized ledger written through the service: the audit finds nothing, and the
replay rebuilds exactly what the store holds (§5.5)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit.ledger_events import entries
from allocation_ledger.audit.pointintime import replay
from allocation_ledger.audit.state import fingerprint
from allocation_ledger.cli import main
from allocation_ledger.domain.command import CommandEnds
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from benchmarks.random_ledger import populate
from tests.builders import a_host, new_id


@pytest.fixture(scope="module")
def long_ledger() -> Iterator[tuple[Ledger, set[int]]]:
    """An in-memory ledger after 2,000 random commands, and the position where each append
    the service made ended (seen by wrapping the store's ``save``)."""
    with open_ledger("memory://") as ledger:
        ends: set[int] = set()
        save = ledger.store.save

        def save_and_note_the_end(*aggregates: object, **kwargs: object) -> object:
            recordings = save(*aggregates, **kwargs)  # type: ignore[arg-type]
            if recordings:
                ends.add(recordings[-1].notification.id)
            return recordings

        ledger.store.save = save_and_note_the_end  # type: ignore[method-assign,assignment]
        populate(ledger, seed=20240501, steps=2000)
        yield ledger, ends


def test_a_long_randomized_ledger_has_no_finding(long_ledger: tuple[Ledger, set[int]]) -> None:
    ledger, _ = long_ledger
    report = audit(ledger.store)
    assert report.findings == []
    assert report.events == (ledger.store.recorder.max_notification_id() or 0) > 3000
    assert report.ok


def test_auditing_from_a_position_builds_the_state_before_it(
    long_ledger: tuple[Ledger, set[int]],
) -> None:
    ledger, ends = long_ledger
    last = ledger.store.recorder.max_notification_id() or 0
    start = max(e for e in ends if e < last // 2) + 1  # where commands begin and end
    stop = max(e for e in ends if e <= last - 10)
    report = audit(ledger.store, start=start, stop=stop)
    assert (report.findings, report.first_position, report.last_position) == (
        [], start, stop)
    assert report.events == stop - start + 1


def test_replay_rebuilds_every_stream_exactly_as_the_store_loads_it(
    long_ledger: tuple[Ledger, set[int]],
) -> None:
    ledger, _ = long_ledger
    state = replay(ledger.store, every_consumer=True)
    assert len(state.aggregates) > 500
    for stream, aggregate in state.aggregates.items():
        assert fingerprint(aggregate) == fingerprint(ledger.store.repository.get(stream))


def test_replay_keeps_the_state_and_lets_go_of_consumers_that_hold_nothing_and_commands(
    long_ledger: tuple[Ledger, set[int]],
) -> None:
    ledger, _ = long_ledger
    everything = replay(ledger.store, every_consumer=True)
    kept = replay(ledger.store)

    held = {stream for stream, a in everything.aggregates.items()
            if isinstance(a, Provider) or (isinstance(a, Consumer) and (
                a.allocations or a.devices or (isinstance(a, Migration) and a.in_flight)))}
    assert set(kept.aggregates) == held < set(everything.aggregates)
    for stream in held:  # consumers let go and read back later replay the same
        assert fingerprint(kept.aggregates[stream]) == fingerprint(
            everything.aggregates[stream])


def test_a_consumer_let_go_is_read_back_when_it_claims_again() -> None:
    with open_ledger("memory://") as ledger:
        host, vm = a_host(ledger), new_id()
        ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
        ledger.release(vm, 1)
        ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id="p", user_id="u")

        report = audit(ledger.store)
        state = replay(ledger.store)

    assert report.findings == []
    consumer = state.consumers[vm]
    assert (consumer.version, consumer.allocations) == (3, {host: {"VCPU": 2}})


def test_commands_are_cut_exactly_where_an_append_ended(
    long_ledger: tuple[Ledger, set[int]],
) -> None:
    ledger, ends = long_ledger
    commands, previous, cuts = CommandEnds(), 0, []
    for entry in entries(ledger.store):
        if commands.opens_command(entry.event):
            cuts.append(previous)
        previous = entry.position
    assert set(cuts) | {previous} == ends  # one command, one append


def test_the_cli_audits_a_clean_durable_ledger_and_exits_0(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    populate(durable_ledger, seed=7, steps=250)
    assert main(["audit", "--url", durable_url]) == 0
    out = capsys.readouterr().out
    assert "No findings" in out
    assert f"{durable_ledger.store.recorder.max_notification_id()} events" in out
