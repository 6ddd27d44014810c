"""A lost reply to a group commit's append, through :class:`LossyProxy`: the driver resends
the group's append, the store refuses the resend (every command's record is in it), and
each caller is answered from its own record: the success it was, never a conflict."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.application.command_ids import intent
from allocation_ledger.audit import audit
from tests.builders import PROJECT, USER, a_host, new_id
from tests.commands.proxy import LossyProxy
from tests.stores import postgres_schema_url

pytestmark = pytest.mark.postgres


@pytest.fixture
def grouped() -> Iterator[tuple[Ledger, LossyProxy]]:
    """A group-committing ledger on a fresh PostgreSQL schema, reached through the proxy."""
    with postgres_schema_url() as url:
        parts = urlsplit(url)
        proxy = LossyProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
        through = url.replace(parts.netloc, f"{parts.username or 'postgres'}@127.0.0.1:"
                                             f"{proxy.port}") + "&connect_timeout=1"
        with open_ledger(through, group_commit=True) as ledger:
            yield ledger, proxy
        proxy.close()


def test_a_lost_reply_to_a_group_append_is_answered_from_the_records(
        grouped: tuple[Ledger, LossyProxy]) -> None:
    ledger, proxy = grouped
    commits = ledger.commits
    assert commits is not None
    host = a_host(ledger, vcpu=100)
    vms = [new_id() for _ in range(8)]
    gate, leading = threading.Event(), threading.Event()

    def hold(_uow: object, _command: object) -> None:
        leading.set()
        gate.wait(30)

    def claim(vm: str) -> Any:
        return ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER)

    with ThreadPoolExecutor(len(vms) + 1) as pool:
        first = pool.submit(commits.run, hold, None, intent("hold", None, None))
        assert leading.wait(30)  # the first command holds the commit: the claims queue
        futures = []
        for queued, vm in enumerate(vms, 1):
            futures.append(pool.submit(claim, vm))
            deadline = time.monotonic() + 30
            while commits.waiting < queued and time.monotonic() < deadline:
                time.sleep(0.001)
        lost = proxy.lost
        proxy.lose_next_reply()  # the group's one append commits; its reply is lost
        gate.set()
        first.result()
        found = [f.exception() or f.result() for f in futures]

    assert proxy.lost == lost + 1, "no reply was lost"
    assert [getattr(view, "generation", view) for view in found] == [1] * 8  # no conflict
    # the group's append was refused on its resend: each answer is read from its record
    assert [view.replayed for view in found] == [True] * 8
    assert all(ledger.consumer(vm).allocations == {host: {"VCPU": 2}} for vm in vms)
    provider = ledger.provider(host)
    assert provider.usages["VCPU"] == 16  # applied once each
    report = audit(ledger.store)
    assert report.ok, report.findings
