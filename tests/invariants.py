"""docs/guarantees.md §5 invariants, checked from the store's current state, for tests to call after
every step: ``assert_invariants(ledger)``."""

from __future__ import annotations

from collections import defaultdict

from allocation_ledger import Ledger
from allocation_ledger.adapters import chain
from allocation_ledger.audit.chain import ChainCheck
from allocation_ledger.audit.integrity import chained
from allocation_ledger.audit.ledger_events import notifications
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider


def current_aggregates(ledger: Ledger) -> tuple[list[Provider], list[Consumer]]:
    """Every provider and consumer stream at its latest version."""
    streams = {n.originator_id for n in ledger.store.recorder.select_notifications(1, 10**9)}
    providers: list[Provider] = []
    consumers: list[Consumer] = []
    for stream in streams:
        found = ledger.store.get(stream)
        if isinstance(found, Provider):
            providers.append(found)
        elif isinstance(found, Consumer):
            consumers.append(found)
    return providers, consumers


def violations(ledger: Ledger) -> list[str]:
    """Every broken invariant, as readable lines (empty when all hold)."""
    providers, consumers = current_aggregates(ledger)
    usage, device_usage, holders = _tally(consumers)
    found = [
        f"migration {c.uuid} is {c.status} but holds {c.allocations}"
        for c in consumers
        if isinstance(c, Migration) and c.allocations and not c.in_flight
    ]
    for p in providers:
        found += _usage_problems(p, usage)
        found += _device_problems(p, device_usage, holders)
    found += [
        f"device {d} ({rc}) on {rp} has holders {who}"
        for (rp, rc, d), who in holders.items()
        if len(who) > 1
    ]
    return found


Tally = dict[tuple[str, str], int]
Holders = dict[tuple[str, str, str], list[str]]


def _tally(consumers: list[Consumer]) -> tuple[Tally, Tally, Holders]:
    usage: Tally = defaultdict(int)
    device_usage: Tally = defaultdict(int)
    holders: Holders = defaultdict(list)
    for c in consumers:
        for rp, resources in c.allocations.items():
            for rc, amount in resources.items():
                usage[(rp, rc)] += amount
                if c.devices.get(rp, {}).get(rc):
                    device_usage[(rp, rc)] += amount
        for rp, by_rc in c.devices.items():
            for rc, ids in by_rc.items():
                for d in ids:
                    holders[(rp, rc, d)].append(c.uuid)
    return usage, device_usage, holders


def _usage_problems(p: Provider, usage: Tally) -> list[str]:
    classes = set(p.usages) | {rc for (rp, rc) in usage if rp == p.uuid}
    return [
        f"provider {p.uuid} {rc}: usage {p.usages.get(rc, 0)} != sum of allocations "
        f"{usage.get((p.uuid, rc), 0)}"
        for rc in sorted(classes)
        if p.usages.get(rc, 0) != usage.get((p.uuid, rc), 0)
    ]


def _device_problems(p: Provider, device_usage: Tally, holders: Holders) -> list[str]:
    found: list[str] = []
    for rc, devices in p.devices.items():
        held = {d: h for d, h in devices.items() if h is not None}
        if len(held) != device_usage.get((p.uuid, rc), 0):
            found.append(f"provider {p.uuid} {rc}: {len(held)} devices held but "
                         f"{device_usage.get((p.uuid, rc), 0)} used by device holders")
        found += [
            f"device {d} on {p.uuid}: provider says {h}, consumers say "
            f"{holders.get((p.uuid, rc, d))}"
            for d, h in held.items()
            if holders.get((p.uuid, rc, d)) != [h]
        ]
    return found


def assert_invariants(ledger: Ledger) -> None:
    """Fail with every broken invariant listed; the hash chain must be whole too (racing
    appends link in ledger order)."""
    problems = violations(ledger)
    assert not problems, "\n".join(problems)
    if chained(ledger.store):
        links = ChainCheck(chain.GENESIS, getattr(ledger.store.recorder, "chain_key", None))
        for notification in notifications(ledger.store):
            links.observe(notification)
        assert not links.findings, "\n".join(x.line() for x in links.findings)
