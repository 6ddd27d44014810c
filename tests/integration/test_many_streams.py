"""Many streams in one read (``EventStore.get_many``): each as ``get`` gives it, cached or not,
from a snapshot or whole, with another writer's events in between; and the HTTP view of a
consumer reads its providers in one query, however many they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.eventstore import SNAPSHOT_INTERVAL
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id
from allocation_ledger.http.allocations import serialize_consumer
from allocation_ledger.http.auth import Caller
from allocation_ledger.http.context import Ctx
from tests.builders import a_host, an_instance, new_id


def _state(aggregate: Any) -> Any:
    return None if aggregate is None else (type(aggregate), aggregate.version,
                                           aggregate.__dict__)


def _long_host(ledger: Ledger) -> str:
    host = a_host(ledger, vcpu=8, memory_mb=None)
    for generation in range(1, SNAPSHOT_INTERVAL + 5):
        ledger.set_inventory(host, "VCPU", {"total": 8 + generation % 2}, generation)
    return host


@pytest.mark.parametrize("from_snapshots", [False, True])
def test_each_stream_reads_as_get_reads_it(durable_url: str, from_snapshots: bool) -> None:
    url = durable_url
    with open_ledger(url) as writer, open_ledger(url) as reader:
        long_host, host, gone = _long_host(writer), a_host(writer), new_id()
        vm = an_instance(writer, {host: {"VCPU": 1}}).consumer_uuid
        streams = [provider_stream_id(long_host), provider_stream_id(host),
                   consumer_stream_id(vm), provider_stream_id(gone)]
        reader.store.get(provider_stream_id(host))  # cached by the reader...
        writer.claim(new_id(), {host: {"VCPU": 2}}, None, project_id="p", user_id="u")
        # ...and moved on since by the other writer: brought up to date in the read
        many = reader.store.get_many(streams + streams[:1], from_snapshots=from_snapshots)
        with open_ledger(url) as fresh:
            assert list(many) == streams
            assert {s: _state(a) for s, a in many.items()} == {
                s: _state(fresh.store.get(s)) for s in streams}
        again = reader.store.get_many(streams, from_snapshots=from_snapshots)  # all cached
        assert {s: _state(a) for s, a in again.items()} == {
            s: _state(a) for s, a in many.items()}
        # what it hands out are copies: the cached ones stay as they were
        again[streams[1]].trigger_event(type(again[streams[1]]).InventoriesSet, request={},
                                        inventories={})
        assert _state(reader.store.get(streams[1])) == _state(many[streams[1]])


@pytest.fixture
def counted(pg_url: str) -> Iterator[tuple[Ledger, Callable[[], int]]]:
    """A PostgreSQL ledger whose store counts its reads (each one a round trip)."""
    with open_ledger(pg_url) as ledger:
        calls = [0]
        recorders = [ledger.store.recorder]
        if ledger.store.snapshots is not None:
            recorders.append(ledger.store.snapshots.recorder)
        for recorder in recorders:
            for name in ("select_events", "select_streams"):
                if hasattr(recorder, name):
                    original = getattr(recorder, name)

                    def count(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                        calls[0] += 1
                        return _original(*args, **kwargs)

                    setattr(recorder, name, count)
        yield ledger, lambda: calls[0]


@pytest.mark.postgres
def test_a_consumers_view_reads_its_providers_in_one_query(
        counted: tuple[Ledger, Callable[[], int]]) -> None:
    ledger, calls = counted
    reads = {}
    for count in (1, 6):
        hosts = [a_host(ledger) for _ in range(count)]
        vm = ledger.consumer(an_instance(ledger, {h: {"VCPU": 1} for h in hosts}).consumer_uuid)
        ctx = Ctx(ledger, (1, 28), Caller("admin", "admin"), "req-1", {}, {}, b"", None)
        before = calls()
        body = serialize_consumer(ctx, vm)  # GET /allocations/{consumer_uuid}'s body
        reads[count] = calls() - before
        assert {rp: a["generation"] for rp, a in body["allocations"].items()} == {
            h: ledger.provider(h).generation for h in hosts}
        assert body["consumer_generation"] == vm.generation
    assert reads[6] == reads[1] == 1, reads


def test_a_stream_another_thread_caches_meanwhile_is_still_read(durable_url: str) -> None:
    with open_ledger(durable_url) as ledger:
        host, other = a_host(ledger), a_host(ledger)
        streams = [provider_stream_id(host), provider_stream_id(other)]
        with open_ledger(durable_url) as reader:
            store = reader.store
            store.get(streams[1])  # cached, then moved on by another writer
            ledger.set_inventory(other, "VCPU", {"total": 9}, 1)
            select = store._select_streams

            def meanwhile(*args: Any) -> Any:
                found = select(*args)
                for stream in streams:  # another thread reads both in between
                    store.get(stream)
                return found

            store._select_streams = meanwhile  # type: ignore[method-assign]
            many = store.get_many(streams)
            assert {s: _state(a) for s, a in many.items()} == {
                s: _state(ledger.store.get(s)) for s in streams}
