"""Where a replay sees one command end and the next begin (``domain.command.CommandEnds``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from allocation_ledger.domain.command import CommandEnds


def event(command_id: str | None, **request: str) -> Any:
    """An event carrying a request (with ``command_id`` unless it is ``None``)."""
    if command_id is not None:
        request["command_id"] = command_id
    return SimpleNamespace(request=request)


@pytest.mark.parametrize(("events", "cuts"), [
    # one command's record and events, then the next command's
    ([event("a"), event("a"), event("a"), event("b"), event("b")], [3]),
    # the same request but for the id: two commands
    ([event("a", actor="x"), event("b", actor="x")], [1]),
    # a command id that comes back after another is a new cut (ids are not re-used in a
    # ledger: the record's stream is unique), and a first event opens nothing
    ([event("a"), event("b"), event("a")], [1, 2]),
    # events without an id: a new request mapping is a new command, the same one is not
    ([event(None, actor="x"), event(None, actor="x"), event(None, actor="y")], [2]),
])
def test_a_command_begins_exactly_where_its_id_changes(events: list[Any],
                                                       cuts: list[int]) -> None:
    ends = CommandEnds()
    assert [i for i, e in enumerate(events) if ends.opens_command(e)] == cuts
