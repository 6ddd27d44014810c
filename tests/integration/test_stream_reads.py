"""The recorders' own reads of one stream (``select_events``) against the library's: the
same events, in the same order, for every filter, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder

FILTERS = [
    {},
    {"gt": 3},
    {"lte": 4},
    {"gt": 2, "lte": 5},
    {"desc": True},
    {"desc": True, "limit": 1},
    {"gt": 1, "limit": 3},
    {"gt": 2, "lte": 6, "desc": True, "limit": 2},
    {"gt": 9},
]


@pytest.fixture
def opened(durable_url: str) -> Iterator[Ledger]:
    with open_ledger(durable_url) as ledger:
        yield ledger


def _library(recorder: Any, stream: Any, **kwargs: Any) -> list[StoredEvent]:
    base = PostgresAggregateRecorder if isinstance(recorder, OneTripApplicationRecorder) \
        else SQLiteAggregateRecorder
    return list(base.select_events(recorder, stream, **kwargs))


@pytest.mark.parametrize("kwargs", FILTERS, ids=[repr(f) for f in FILTERS])
def test_reads_a_stream_as_the_library_does(opened: Ledger, kwargs: dict[str, Any]) -> None:
    recorder = opened.store.recorder
    stream, other = uuid4(), uuid4()
    recorder.insert_events([StoredEvent(stream, v, f"m:T{v}", b'{"v":%d}' % v)
                            for v in range(1, 8)])
    recorder.insert_events([StoredEvent(other, 1, "m:T", b"{}")])
    ours = list(recorder.select_events(stream, **kwargs))
    assert ours == _library(recorder, stream, **kwargs)
    assert all(e.originator_id == stream and type(e.state) is bytes for e in ours)
    for named in (str(stream), stream.hex):  # a stream named by text: as the library reads it
        assert list(recorder.select_events(named, **kwargs)) == _library(
            recorder, named, **kwargs)


def test_an_unknown_stream_reads_nothing(opened: Ledger) -> None:
    assert list(opened.store.recorder.select_events(uuid4())) == []


def test_a_malformed_stream_id_fails_as_in_the_library(opened: Ledger) -> None:
    recorder = opened.store.recorder
    try:
        expected: Any = _library(recorder, "not-a-uuid")
    except Exception as err:  # PostgreSQL refuses the text: the same error either way
        with pytest.raises(type(err)):
            recorder.select_events("not-a-uuid")
    else:  # SQLite compares text: nothing found
        assert list(recorder.select_events("not-a-uuid")) == expected == []
