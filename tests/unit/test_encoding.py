"""The store's mapper writes plain events with ``orjson`` (``adapters/encoding.py``): the
bytes must be exactly those the library's mapper writes, since the hash chain, every reader
of the history and every ledger already written depend on them."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.compressor import ZlibCompressor
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)

from allocation_ledger import open_ledger
from allocation_ledger.adapters.encoding import PlainMapper, is_plain
from tests.builders import PROJECT, USER, a_host, new_id


class Sample(Aggregate.Event):
    """An event carrying any payload."""

    payload: Any


class Word(str):
    """A subclass of a plain type (the two encoders may treat it differently)."""


class Colour(Enum):
    RED = "red"


def _transcoder() -> JSONTranscoder:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO(), DecimalAsStr()):
        transcoder.register(transcoding)
    return transcoder


def _mappers(**options: Any) -> tuple[Mapper[UUID], PlainMapper]:
    return Mapper(_transcoder(), **options), PlainMapper(_transcoder(), **options)


def _sample(payload: Any) -> Sample:
    return Sample(originator_id=uuid4(), originator_version=3,  # type: ignore[call-arg]
                  timestamp=datetime.now(UTC), payload=payload)


ID = UUID("6c1b0e1e-0d4f-4a7e-9d5c-8f2a3b4c5d6e")
NOW = datetime(2026, 11, 25, 18, 0, 0, 123456, tzinfo=UTC)
EVERY_CHARACTER = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)

PAYLOADS: list[Any] = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 10**40,
    "", "plain", EVERY_CHARACTER, "\x00\x1f\x7f\x80\x9f\u2028\u2029\"\\/\b\f\n\r\t",
    [], {}, [1, "a", None, [True]], {"a": {"b": [1, {"c": "d"}]}},
    1.0, 0.1, 16.0, 1.5e16, 1e-05, -0.0, float("inf"), float("nan"), {"ratio": 1.5},
    (1, 2), {"t": (1,)}, {1: "int key"}, {None: "none key"}, {"nested": {2: 3}},
    ID, {"id": ID}, [NOW], Decimal("1.10"), {"d": Decimal("2")},
    datetime(2020, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-5))), datetime(2020, 1, 1),
    Word("w"), {"w": Word("w")}, {Word("k"): 1},
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=[f"{i}-{type(p).__name__}"
                                                   for i, p in enumerate(PAYLOADS)])
def test_every_payload_is_written_as_the_library_writes_it(payload: Any) -> None:
    library, plain = _mappers()
    event = _sample(payload)
    assert plain.to_stored_event(event) == library.to_stored_event(event)


@pytest.mark.parametrize("payload", ["\ud800", {"s": "a\udfffb"}, Colour.RED, object()],
                         ids=["surrogate", "nested-surrogate", "enum", "object"])
def test_what_the_library_refuses_is_refused_alike(payload: Any) -> None:
    library, plain = _mappers()
    event = _sample(payload)
    with pytest.raises(Exception) as expected:  # whatever the library raises
        library.to_stored_event(event)
    with pytest.raises(type(expected.value)):
        plain.to_stored_event(event)


def test_an_unregistered_type_is_the_library_s_error() -> None:
    plain = PlainMapper(JSONTranscoder())  # no transcodings: not even the timestamp's
    with pytest.raises(TranscodingNotRegisteredError):
        plain.to_stored_event(_sample("x"))


def test_a_cipher_or_compression_is_left_to_the_library() -> None:
    library, plain = _mappers(compressor=ZlibCompressor())
    event = _sample({"a": [1, "b"]})
    assert plain.to_stored_event(event) == library.to_stored_event(event)
    library, plain = _mappers(cipher=Reversed())
    assert plain.to_stored_event(event) == library.to_stored_event(event)
    assert plain.to_domain_event(plain.to_stored_event(event)) == event


class Reversed:
    """A stand-in cipher: the bytes backwards."""

    def encrypt(self, plaintext: bytes) -> bytes:
        return plaintext[::-1]

    def decrypt(self, ciphertext: bytes) -> bytes:
        return ciphertext[::-1]


def test_plain_values() -> None:
    assert is_plain({"a": [1, None, True, "s", {"b": 2**64 - 1}]})
    assert not is_plain({"a": 1.0}) and not is_plain((1,)) and not is_plain({1: 1})
    assert not is_plain(2**64) and not is_plain(Word("w")) and not is_plain(ID)


def test_the_events_of_a_ledger_are_written_as_the_library_writes_them() -> None:
    """Every kind of event a ledger writes (claims, devices, inventories with ratios,
    moves), re-encoded both ways, and as stored."""
    with open_ledger("memory://encoding") as ledger:
        host = a_host(ledger, vcpu=8, CUSTOM_PMEM={"total": 2})
        other = a_host(ledger, vcpu=8)
        generation = ledger.provider(host).generation
        ledger.set_devices(host, "CUSTOM_PMEM", ["ns0", "ns1"], generation)
        generation = ledger.provider(host).generation
        ledger.set_inventory(host, "VCPU", {"total": 8, "allocation_ratio": 1.5}, generation)
        vm = ledger.claim(new_id(), {host: {"VCPU": 2, "CUSTOM_PMEM": 1}}, None,
                          project_id=PROJECT, user_id=USER,
                          request={"actor": "ä", "reason": "line\nbreak"}, command_id="cid")
        migration = new_id()
        ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
        ledger.claim(vm.consumer_uuid, {other: {"VCPU": 2}}, None, project_id=PROJECT,
                     user_id=USER)
        ledger.confirm(migration, 1)
        library = Mapper(ledger.store.mapper.transcoder)
        stored = ledger.store.recorder.select_notifications(start=1, limit=sys.maxsize)
        kinds = set()
        for notification in stored:
            event = ledger.store.mapper.to_domain_event(notification)
            ours = ledger.store.mapper.to_stored_event(event)
            assert ours == library.to_stored_event(event)
            assert ours.state == notification.state
            kinds.add(notification.topic)
        assert isinstance(ledger.store.mapper, PlainMapper)
        assert len(kinds) >= 10
