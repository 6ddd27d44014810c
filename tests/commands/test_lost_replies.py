"""Lost replies on PostgreSQL, through :class:`LossyProxy`: a command whose commit the
caller never heard of is reported as the success it was (never as a conflict, never as a
raw driver error), and is in the ledger exactly once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.application import command_ids
from allocation_ledger.audit import audit
from allocation_ledger.domain.errors import OutcomeUnknown, StoreUnavailable
from tests.builders import PROJECT, USER, a_host, new_id
from tests.commands.kinds import KINDS
from tests.commands.proxy import LossyProxy
from tests.stores import postgres_schema_url

pytestmark = pytest.mark.postgres


@pytest.fixture
def proxied() -> Iterator[tuple[Ledger, LossyProxy]]:
    """A ledger on a fresh PostgreSQL schema, reached through the proxy."""
    with postgres_schema_url() as url:
        parts = urlsplit(url)
        proxy = LossyProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
        through = url.replace(parts.netloc, f"{parts.username or 'postgres'}@127.0.0.1:"
                                             f"{proxy.port}") + "&connect_timeout=1"
        with open_ledger(through) as ledger:
            yield ledger, proxy
        proxy.close()


def stamped(ledger: Ledger, command_id: str) -> int:
    """How many events of the ledger carry ``command_id``."""
    count, start = 0, 1
    while batch := ledger.store.recorder.select_notifications(start, 1000):
        count += sum(json.loads(n.state)["request"].get("command_id") == command_id
                     for n in batch)
        start = batch[-1].id + 1
    return count


def reachable(ledger: Ledger, within: float = 60.0) -> None:
    """Wait until the ledger reconnects (its pool backs off while the store is away)."""
    deadline = time.monotonic() + within
    while True:
        try:
            ledger.command("anything")
            return
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise


def unflagged(value: Any) -> Any:
    if isinstance(value, list):
        return [unflagged(v) for v in value]
    return replace(value, replayed=False) if hasattr(value, "replayed") else value


def test_every_kind_of_command_whose_reply_is_lost_is_reported_as_done_once(
        proxied: tuple[Ledger, LossyProxy]) -> None:
    ledger, proxy = proxied
    done = 0
    for round_ in range(4):
        for kind in KINDS:  # 16 kinds, 64 commands
            ctx = kind.setup(ledger)
            cid = f"{kind.name}-{round_}"
            lost = proxy.lost
            proxy.lose_next_reply()

            outcome = kind.call(ledger, ctx, cid, 0)

            assert proxy.lost == lost + 1, f"{cid}: no reply was lost"
            found = ledger.command(cid)
            assert found.applied and found.name == kind.name
            assert stamped(ledger, cid) == found.events + 1  # its events and its record, once
            assert unflagged(kind.call(ledger, ctx, cid, 0)) == unflagged(outcome)
            done += 1
    assert done >= 50
    report = audit(ledger.store)
    assert report.ok, report.findings


def test_without_a_command_id_a_lost_reply_is_still_no_conflict(
        proxied: tuple[Ledger, LossyProxy]) -> None:
    """The driver resends the insert; the ledger's own id shows it was its own commit."""
    ledger, proxy = proxied
    host = a_host(ledger)
    vm = new_id()
    proxy.lose_next_reply()
    view = ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER)
    assert (proxy.lost, view.generation, ledger.consumer(vm).generation) == (1, 1, 1)
    assert ledger.provider(host).usages["VCPU"] == 2


def test_an_unknown_outcome_is_found_by_looking_the_command_up(
        proxied: tuple[Ledger, LossyProxy], monkeypatch: pytest.MonkeyPatch) -> None:
    """The store goes away right after committing: the caller is told the outcome is
    unknown (not a conflict, not a driver error), and ``command(id)`` tells the truth."""
    ledger, proxy = proxied
    monkeypatch.setattr(command_ids, "RECOVERY_ATTEMPTS", 1)
    host = a_host(ledger)
    committed, swallowed = new_id(), new_id()
    for vm, cid, fault in ((committed, "lost-after-commit", proxy.lose_next_reply),
                           (swallowed, "lost-before-commit", proxy.swallow_next)):
        fault()
        cut = threading.Timer(0.05, proxy.go_down)  # ... and the store goes out of reach
        cut.start()
        with pytest.raises(OutcomeUnknown) as unknown:
            ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                         command_id=cid)
        assert unknown.value.command_id == cid and not unknown.value.outcome_known
        assert "retry with the same command id" in str(unknown.value)
        cut.join()
        proxy.come_up()

    reachable(ledger)
    assert ledger.command("lost-after-commit").applied
    assert not ledger.command("lost-before-commit").applied
    assert ledger.consumer(committed).generation == 1
    assert ledger.consumer(swallowed).generation is None
    for vm, cid in ((committed, "lost-after-commit"), (swallowed, "lost-before-commit")):
        view = ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                            command_id=cid)
        assert view.generation == 1 and view.replayed == (cid == "lost-after-commit")
    assert ledger.provider(host).usages["VCPU"] == 2


def test_opening_a_store_out_of_reach_is_a_ledger_error() -> None:
    with pytest.raises(StoreUnavailable, match="cannot use the store"):
        open_ledger("postgresql://postgres@127.0.0.1:5449/ledger?connect_timeout=1")
