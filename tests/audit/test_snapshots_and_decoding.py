"""§5.5 for what the store keeps besides events (snapshots), and the replay's fast decoder
against the store's own mapper."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from eventsourcing.persistence import Mapper, Notification, StoredEvent

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import SNAPSHOT_INTERVAL
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.ledger_events import notifications
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.provider import Provider
from benchmarks.random_ledger import populate
from tests.audit import tampering
from tests.builders import a_host


def _provider_at_version(ledger: Ledger, version: int) -> str:
    host = a_host(ledger, vcpu=8, memory_mb=None)  # versions 1 and 2 (generations 0, 1)
    for generation in range(1, version - 1):
        ledger.set_inventory(host, "VCPU", {"total": 8 + generation % 2}, generation)
    return host


def test_snapshots_taken_by_the_store_agree_with_the_replay(ledger: Ledger) -> None:
    host = _provider_at_version(ledger, SNAPSHOT_INTERVAL + 1)
    assert ledger.store.snapshots is not None
    taken = list(ledger.store.snapshots.get(provider_stream_id(host)))
    assert [s.originator_version for s in taken] == [SNAPSHOT_INTERVAL]
    assert audit(ledger.store).findings == []


def test_a_snapshot_version_crossed_mid_append_is_taken_at_that_version(
        ledger: Ledger) -> None:
    """Three events in one append, the interval falling on the first: that snapshot is
    read back from the store at its version, not taken from the aggregate two events on."""
    host = _provider_at_version(ledger, SNAPSHOT_INTERVAL - 1)
    provider = tampering.provider(ledger, host)
    for total in (20, 21, 22):
        provider.trigger_event(Provider.InventoriesSet, request=tampering.edit(),
                               inventories={"VCPU": {**provider.inventories["VCPU"],
                                                     "total": total}})
    ledger.store.save(provider)
    assert ledger.store.snapshots is not None
    [taken] = ledger.store.snapshots.get(provider_stream_id(host))
    assert taken.originator_version == SNAPSHOT_INTERVAL
    assert taken.state["inventories"]["VCPU"]["total"] == 20
    assert audit(ledger.store).findings == []


def test_a_snapshot_crossed_mid_append_comes_from_the_cache_as_the_store_replays_it(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three events in one append, the interval falling on the first, the stream cached
    from before the append: the snapshot is the cached provider brought to that version by
    the append's own events (nothing read back), exactly what the store's events replay."""
    host = _provider_at_version(ledger, SNAPSHOT_INTERVAL - 1)
    provider = tampering.provider(ledger, host)  # and cached, at SNAPSHOT_INTERVAL - 1
    for total in (20, 21, 22):
        provider.trigger_event(Provider.InventoriesSet, request=tampering.edit(),
                               inventories={"VCPU": {**provider.inventories["VCPU"],
                                                     "total": total}})

    def read_back(*args: object, **kwargs: object) -> None:
        raise AssertionError("the snapshot was read back from the store")

    monkeypatch.setattr(ledger.store, "take_snapshot", read_back)
    ledger.store.save(provider)
    assert ledger.store.snapshots is not None
    [taken] = ledger.store.snapshots.get(provider_stream_id(host))
    assert taken.originator_version == SNAPSHOT_INTERVAL
    assert taken.state["inventories"]["VCPU"]["total"] == 20
    replayed = ledger.store.repository.get(provider_stream_id(host), version=SNAPSHOT_INTERVAL)
    assert taken.state == Provider.Snapshot.take(replayed).state  # type: ignore[attr-defined]
    assert audit(ledger.store).findings == []


def test_a_snapshot_that_differs_from_its_events_is_reported(ledger: Ledger) -> None:
    host = _provider_at_version(ledger, SNAPSHOT_INTERVAL - 1)
    provider = tampering.provider(ledger, host)
    provider.trigger_event(Provider.InventoriesSet, inventories=provider.inventories,
                           request=tampering.edit())
    ledger.store.events.put(provider.collect_events())  # the event, without its snapshot
    position = ledger.store.recorder.max_notification_id()
    provider.usages = {"VCPU": 99}  # ... and a snapshot that says something else
    snapshot: Any = Provider.Snapshot.take(provider)
    assert ledger.store.snapshots is not None
    ledger.store.snapshots.put([snapshot])

    [finding] = audit(ledger.store).findings
    assert (finding.kind, finding.position) == (f.SNAPSHOT_DRIFT, position)
    assert finding.ids == {"uuid": host, "fields": ["usages"]}
    assert str(provider_stream_id(host)) == finding.stream


def test_a_streams_snapshots_are_read_together_and_each_checked(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three snapshots of one provider, the second one wrong: the audit reads them in one
    query (one read each took most of what checking it cost) and still finds that one."""
    host = _provider_at_version(ledger, 2)
    provider = tampering.provider(ledger, host)
    snapshots = ledger.store.snapshots
    assert snapshots is not None
    for version in range(3, 3 * SNAPSHOT_INTERVAL + 1):
        provider.trigger_event(Provider.InventoriesSet, inventories=provider.inventories,
                               request=tampering.edit())
        if version % SNAPSHOT_INTERVAL == 0:
            ledger.store.events.put(provider.collect_events())  # events, no snapshot ...
            usages = provider.usages
            if version == 2 * SNAPSHOT_INTERVAL:
                provider.usages = {"VCPU": 99}  # ... and snapshots, the second one wrong
            snapshots.put([Provider.Snapshot.take(provider)])
            provider.usages = usages
    reads: list[object] = []
    get = snapshots.get

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return get(*args, **kwargs)

    monkeypatch.setattr(snapshots, "get", counted)
    [finding] = audit(ledger.store).findings
    assert finding.kind == f.SNAPSHOT_DRIFT
    assert finding.numbers == {"version": 2 * SNAPSHOT_INTERVAL}
    assert len(reads) == 1


def _library(ledger: Ledger, record: StoredEvent) -> Any:
    """The event the library's own mapper makes of ``record`` (the store's mapper decodes
    through the fast decoder too, so it is no reference)."""
    return Mapper.to_domain_event(ledger.store.mapper, record)


def test_the_fast_decoder_gives_the_mappers_events(url: str) -> None:
    with open_ledger(url) as ledger:
        populate(ledger, seed=3, steps=300)
        decoder = Decoder(ledger.store.mapper)
        for notification in notifications(ledger.store):
            slow = _library(ledger, notification)
            for fast in (decoder(notification),
                         ledger.store.mapper.to_domain_event(notification)):
                assert (type(fast), vars(fast)) == (type(slow), vars(slow))


def test_the_stores_reads_give_the_librarys_events(url: str) -> None:
    """Every read of the write path (streams, snapshots) decodes through the store's mapper:
    its events and snapshots are the library mapper's."""
    with open_ledger(url) as ledger:
        populate(ledger, seed=4, steps=300)
        _provider_at_version(ledger, SNAPSHOT_INTERVAL + 1)  # one stream with a snapshot
        store = ledger.store
        streams = {n.originator_id for n in notifications(store)}
        records = [r for stream in streams for r in store.recorder.select_events(stream)]
        assert store.snapshots is not None
        snapshots = [r for stream in streams
                     for r in store.snapshots.recorder.select_events(stream)]
        assert snapshots
        records += snapshots
        for record in records:
            ours, theirs = store.mapper.to_domain_event(record), _library(ledger, record)
            assert (type(ours), vars(ours)) == (type(theirs), vars(theirs))


def _a_record(ledger: Ledger, edit: Callable[[dict[str, Any]], None]) -> Notification:
    """The host's first event, its JSON state changed by ``edit``."""
    a_host(ledger, vcpu=8, memory_mb=None)
    first = ledger.store.recorder.select_notifications(1, 1)[0]
    state = json.loads(first.state)
    edit(state)
    return replace(first, state=json.dumps(state).encode())


def _nested_stamp(state: dict[str, Any]) -> None:
    state["request"]["at"] = state.pop("timestamp")
    state["timestamp"] = state["request"]["at"]["_data_"]


def _unknown_stamp(state: dict[str, Any]) -> None:
    state["timestamp"]["_type_"] = "no_such_type"


@pytest.mark.parametrize("edit", [
    pytest.param(lambda state: state.update(name=2**70), id="integer beyond 64 bits"),
    pytest.param(lambda state: state.update(name=-(2**63) - 1), id="integer below -2**63"),
    pytest.param(lambda state: state.update(name=-(2**70)), id="integer far below"),
    pytest.param(lambda state: state.update(name=2**64 - 1), id="largest unsigned 64 bits"),
    pytest.param(lambda state: state.update(name=2**64), id="2**64"),
    pytest.param(_nested_stamp, id="the typed value nested"),
])
def test_records_the_fast_path_cannot_read_go_through_the_mapper(
        ledger: Ledger, edit: Callable[[dict[str, Any]], None]) -> None:
    record = _a_record(ledger, edit)
    slow = _library(ledger, record)
    for fast in (Decoder(ledger.store.mapper)(record), ledger.store.mapper.to_domain_event(record)):
        assert (type(fast), vars(fast)) == (type(slow), vars(slow))
        assert [type(v) for v in vars(fast).values()] == [type(v) for v in vars(slow).values()]


def test_an_unknown_typed_timestamp_fails_as_the_mapper_fails(ledger: Ledger) -> None:
    record = _a_record(ledger, _unknown_stamp)
    with pytest.raises(Exception) as slow:
        _library(ledger, record)
    with pytest.raises(type(slow.value)):
        Decoder(ledger.store.mapper)(record)
    with pytest.raises(type(slow.value)):
        ledger.store.mapper.to_domain_event(record)
