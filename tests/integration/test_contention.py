"""After a clash on a host, a writer decides on a fresh copy of that host for a while: its
next claim there is appended once instead of being refused and run again. Two ledgers on
one store stand for two writer processes (each has a cache of its own)."""

from __future__ import annotations

from typing import Any

from allocation_ledger import Ledger, open_ledger
from tests.builders import a_host, new_id


def _counting(ledger: Ledger, method: str) -> list[int]:
    """Count the calls the ledger's recorder gets to ``method`` (refused appends too)."""
    calls: list[int] = []
    original = getattr(ledger.store.recorder, method)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    setattr(ledger.store.recorder, method, counted)
    return calls


def _claim(ledger: Ledger, host: str) -> int | None:
    return ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id="p",
                        user_id="u").generation


def test_after_a_clash_the_next_claim_on_that_host_is_appended_once(durable_url: str) -> None:
    with open_ledger(durable_url) as mine, open_ledger(durable_url) as theirs:
        host = a_host(mine, vcpu=100)
        registered = mine.provider(host).generation
        _claim(mine, host)  # my cache holds the host
        appends = _counting(mine, "insert_events")

        _claim(theirs, host)  # my copy is now stale
        _claim(mine, host)
        assert len(appends) == 2  # refused on the stale copy, then appended
        assert mine.policy.contended(host)

        _claim(theirs, host)
        _claim(mine, host)
        assert len(appends) == 3  # the fresh copy was appended at once

        assert mine.provider(host).usages["VCPU"] == 5
        assert mine.provider(host).generation == registered + 5


def test_a_host_nobody_else_writes_to_is_not_read_before_a_claim(durable_url: str) -> None:
    with open_ledger(durable_url) as mine:
        host = a_host(mine, vcpu=100)
        _claim(mine, host)
        reads = _counting(mine, "select_events")
        _claim(mine, host)

        assert reads == [] and not mine.policy.contended(host)
