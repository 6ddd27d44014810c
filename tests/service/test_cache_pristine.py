"""The process's cached providers are what the store holds, whatever a command did to the
working copy it decided on: a write the store then refuses leaves them exactly as they were,
and the next command decides on them. Run on every store."""

from __future__ import annotations

import copy

import pytest
from eventsourcing.persistence import ProgrammingError

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import StoreUnusable
from allocation_ledger.domain.ids import provider_stream_id
from tests.builders import PROJECT, USER, a_host, new_id
from tests.invariants import assert_invariants


def test_an_append_the_store_refuses_leaves_the_cached_provider_as_it_was(
        ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=8)
    ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
    cache = ledger.store.repository.cache
    assert cache is not None
    cached = cache.get(provider_stream_id(host))
    before = copy.deepcopy(cached.__dict__)

    def refuse(*args: object, **kwargs: object) -> None:
        raise ProgrammingError("permission denied for table events (a test)")

    recorder = ledger.store.recorder
    recorder.insert_events = refuse  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreUnusable):  # decided (usage 1 + 4), then refused
            ledger.claim(new_id(), {host: {"VCPU": 4}}, None, project_id=PROJECT,
                         user_id=USER)
    finally:
        del recorder.insert_events
    assert cache.get(provider_stream_id(host)) is cached
    assert cached.__dict__ == before

    view = ledger.claim(new_id(), {host: {"VCPU": 7}}, None, project_id=PROJECT,
                        user_id=USER)
    assert view.generation == 1
    assert ledger.provider(host).usages["VCPU"] == 8
    assert ledger.provider(host).generation == before["_version"] - before["uncounted"] + 1
    assert_invariants(ledger)


def test_a_read_hands_out_a_copy_the_cache_does_not_share_changes_with(
        ledger: Ledger) -> None:
    """What a caller does to a provider it read changes nothing another command sees."""
    host = a_host(ledger, vcpu=8)
    ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
    for cached in (False, True):
        read = ledger.store.get(provider_stream_id(host), cached=cached)
        read.rename(f"renamed-{cached}", {"command_id": "c"})  # type: ignore[union-attr]
        read.record_allocations(["x"], {"VCPU": 8}, {}, {"command_id": "c"})  # type: ignore[union-attr]
    assert ledger.provider(host).usages["VCPU"] == 1
    assert ledger.provider(host).name != "renamed-True"
    ledger.claim(new_id(), {host: {"VCPU": 7}}, None, project_id=PROJECT, user_id=USER)
    assert ledger.provider(host).usages["VCPU"] == 8
    assert_invariants(ledger)
