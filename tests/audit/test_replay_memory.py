"""A replay (the audit's, ``state-at``'s) holds what the cloud holds now, not its past:
consumers that came and went and the record of every command are let go, and nothing
remembers which (issue 16)."""

from __future__ import annotations

from collections.abc import Sized

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.adapters.positions import position_of
from allocation_ledger.audit import audit
from allocation_ledger.audit.pointintime import replay, reviver
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.ids import consumer_stream_id
from tests.builders import a_host, an_instance, new_id


@pytest.mark.parametrize("cycles", [5, 40])
def test_a_replay_of_instances_that_came_and_went_holds_only_the_host(cycles: int) -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        kept = an_instance(ledger, {host: {"VCPU": 1}}).consumer_uuid
        for _ in range(cycles):  # each a claim and a release, each with its command record
            gone = an_instance(ledger, {host: {"VCPU": 2}})
            ledger.release(gone.consumer_uuid, gone.generation)

        state = replay(ledger.store)
        assert audit(ledger.store, stale_after=None).ok

    assert set(state.consumers) == {kept}
    held = {name: len(value) for name, value in vars(state).items()
            if isinstance(value, Sized)}
    assert max(held.values()) <= 2, held  # the host and the one instance, whatever the past


def test_a_stream_is_read_back_only_where_the_store_holds_its_creation_before() -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        vm = new_id()
        ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
        stream = consumer_stream_id(vm)
        created = position_of(ledger.store.recorder, stream, 1)
        assert created is not None
        revive = reviver(ledger.store)

        assert revive(stream, 2, created) is None  # an event before its creation
        assert isinstance(revive(stream, 2, created + 1), Consumer)
        assert revive(consumer_stream_id(new_id()), 2, created + 1) is None  # never created
