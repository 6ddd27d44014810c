"""Where a replay sees one command end and the next begin (see ``adapters.command_ends``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from allocation_ledger.adapters.command_ends import CommandSplitter
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.provider import Provider

P1, P2, C1, C2 = (uuid4() for _ in range(4))
NOW = datetime(2024, 5, 1, tzinfo=UTC)
# The event classes, untyped: their fields come from a metaclass mypy cannot see through.
REGISTERED: Any = Provider.Registered
CHANGED: Any = Provider.AllocationsChanged
CREATED: Any = Consumer.Created
CLAIMED: Any = Consumer.AllocationsClaimed


def provider(stream: UUID, version: int, request: str = "r") -> Any:
    """A provider event (a creation at version 1)."""
    if version == 1:
        return REGISTERED(originator_id=stream, originator_version=1, timestamp=NOW,
                                   originator_topic="", provider_uuid="", name="",
                                   parent_uuid=None, root_uuid="", request={"id": request})
    return CHANGED(originator_id=stream, originator_version=version,
                                       timestamp=NOW, consumers=[], usages={}, holds={},
                                       request={"id": request})


def consumer(stream: UUID, version: int, request: str = "r") -> Any:
    """A consumer event (a creation at version 1)."""
    if version == 1:
        return CREATED(originator_id=stream, originator_version=1, timestamp=NOW,
                                originator_topic="", consumer_uuid="", project_id="",
                                user_id="", consumer_type="INSTANCE", allocations={},
                                devices={}, request={"id": request})
    return CLAIMED(originator_id=stream, originator_version=version,
                                       timestamp=NOW, allocations={}, devices={},
                                       project_id="", user_id="", consumer_type="INSTANCE",
                                       request={"id": request})


@pytest.mark.parametrize(("events", "cuts"), [
    # a new consumer's claim, then a release on the same host: the host goes on alone
    ([consumer(C1, 1), provider(P1, 3), provider(P1, 4), consumer(C1, 2)], [2]),
    # a provider registered with its inventory: one new stream's block
    ([provider(P1, 1), provider(P1, 2), provider(P2, 5)], []),
    # a write on two hosts for two consumers, then the next claim starts with a host again
    ([provider(P1, 3), provider(P2, 4), consumer(C1, 2), consumer(C2, 3), provider(P1, 4)],
     [4]),
    # a new consumer after an existing one: creations come first in a command
    ([provider(P1, 3), consumer(C1, 2), consumer(C2, 1)], [2]),
    # the same shapes, told apart only by their requests
    ([provider(P1, 3, "a"), provider(P2, 3, "b"), consumer(C1, 2, "b")], [1]),
])
def test_cuts_fall_only_where_a_command_certainly_ended(events: list[Any],
                                                         cuts: list[int]) -> None:
    splitter = CommandSplitter()
    assert [i for i, e in enumerate(events) if splitter.opens_command(e)] == cuts
