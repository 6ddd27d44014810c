"""The hash chain and digests against an intruder with the database's rights: every edit,
deletion, reordering, insertion and truncation of the events table, made by plain SQL and
then made consistent or not, is found by ``audit --digest`` at its position."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from uuid import uuid4

import pytest

from allocation_ledger import Ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.chain import Digest, head
from allocation_ledger.cli import main
from tests.audit import tampering
from tests.audit.tampering import EventsTable, Row, rechain
from tests.builders import PROJECT, USER, a_host, new_id

#: Random tamperings per store; each is undone before the next.
TAMPERINGS = 100


def busy(ledger: Ledger, commands: int, seed: int = 1) -> None:
    """A ledger of hosts and instances claiming, swapping, confirming and releasing."""
    rng = random.Random(seed)
    hosts = [a_host(ledger, vcpu=64) for _ in range(3)]
    held: list[tuple[str, int]] = []
    for _ in range(commands):
        if held and rng.random() < 0.3:
            vm, generation = held.pop(rng.randrange(len(held)))
            ledger.release(vm, generation)
        else:
            vm = new_id()
            view = ledger.claim(vm, {rng.choice(hosts): {"VCPU": rng.randint(1, 4)}}, None,
                                project_id=PROJECT, user_id=USER)
            held.append((vm, view.generation or 0))


def the_digest(ledger: Ledger) -> Digest:
    """The ledger's head now."""
    last = ledger.store.recorder.max_notification_id() or 0
    return head(ledger.store.recorder.select_notifications(last, 1)[0])


def edit(rows: list[Row], rng: random.Random) -> tuple[list[Row], int]:
    """A digit of one event's state changed; expect the chain to break there."""
    i = rng.randrange(len(rows))
    state = rows[i][4]
    digits = [k for k, c in enumerate(state) if chr(c).isdigit()]
    k = rng.choice(digits)
    changed = state[:k] + str((int(chr(state[k])) + 1) % 10).encode() + state[k + 1:]
    return [*rows[:i], tampering.with_state(rows[i], changed), *rows[i + 1:]], rows[i][0]


def delete(rows: list[Row], rng: random.Random) -> tuple[list[Row], int]:
    """One event deleted; the chain breaks at the next (the last: the digest's is gone)."""
    i = rng.randrange(len(rows))
    return rows[:i] + rows[i + 1:], rows[i + 1][0] if i + 1 < len(rows) else rows[i][0]


def reorder(rows: list[Row], rng: random.Random) -> tuple[list[Row], int]:
    """Two events swap places (each keeps its own chain hash)."""
    i, j = sorted(rng.sample(range(len(rows)), 2))
    swapped = list(rows)
    swapped[i], swapped[j] = (rows[i][0], *rows[j][1:]), (rows[j][0], *rows[i][1:])
    return swapped, rows[i][0]


def insert(rows: list[Row], rng: random.Random) -> tuple[list[Row], int]:
    """A forged event slipped in before event ``i`` (which moves up one position), with
    the chain hash of the event it displaces."""
    i = rng.randrange(1, len(rows))
    p, _, _, topic, state, hashed = rows[i]
    forged: Row = (p, uuid4(), 1, topic, state, hashed)
    moved = [(q + 1, *rest) for q, *rest in rows[i:]]
    return [*rows[:i], forged, *moved], p  # type: ignore[list-item]


def truncate(rows: list[Row], rng: random.Random) -> tuple[list[Row], int]:
    """The tail cut off after a random event; found at the digest."""
    return rows[:rng.randrange(1, len(rows))], rows[-1][0]


KINDS: list[Callable[[list[Row], random.Random], tuple[list[Row], int]]] = [
    edit, delete, reorder, insert, truncate]


@pytest.mark.parametrize("tamperings", [
    pytest.param(10, id="10-tamperings"),   # every kind, plain and made consistent
    pytest.param(TAMPERINGS, id=f"{TAMPERINGS}-tamperings", marks=pytest.mark.slow),
])
def test_random_tamperings_are_all_found_at_their_position(durable_ledger: Ledger,
                                                           durable_url: str,
                                                           tamperings: int) -> None:
    busy(durable_ledger, 60)
    digest = the_digest(durable_ledger)
    table = EventsTable(durable_url)
    original = table.rows()
    assert audit(durable_ledger.store, digests=[digest]).ok
    rng, missed = random.Random(12), []
    for n in range(tamperings):
        kind = KINDS[n % len(KINDS)]
        consistent = n % 2 == 1
        tampered, position = kind(list(original), rng)
        if consistent:  # every later chain hash recomputed: only the digest can tell
            tampered, position = rechain(tampered), digest.position
        table.replace(tampered)
        report = audit(durable_ledger.store, digests=[digest], snapshots=False)
        chain_findings = [(x.kind, x.position) for x in report.errors
                          if x.kind in (f.CHAIN_BROKEN, f.DIGEST_MISMATCH, f.DIGEST_MISSING)]
        if report.ok or position not in [p for _, p in chain_findings]:
            missed.append((kind.__name__, consistent, position, chain_findings))
        table.replace(original)
    assert missed == []
    assert audit(durable_ledger.store, digests=[digest]).ok  # restored: clean again


def test_the_audit_cli_fails_on_a_changed_history_and_names_the_position(
        durable_ledger: Ledger, durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    busy(durable_ledger, 10)
    assert main(["digest", "--url", durable_url, "--json"]) == 0
    saved = tmp_path / "digest.json"
    saved.write_text(capsys.readouterr().out)
    assert main(["audit", "--url", durable_url, "--digest", str(saved)]) == 0
    capsys.readouterr()
    table = EventsTable(durable_url)
    rows = table.rows()
    digest = json.loads(saved.read_text())
    assert digest["position"] == rows[-1][0]
    table.replace(rechain(rows[:-3]))  # the tail cut off, the chain whole
    assert main(["audit", "--url", durable_url, "--digest", str(saved)]) == 1
    out = capsys.readouterr().out
    assert f"#{digest['position']}" in out and f.DIGEST_MISSING in out
    assert "truncated" in out


@pytest.mark.slow  # a big ledger: the chain over smaller ones is checked by every audit test
def test_an_untampered_ledger_of_ten_thousand_events_verifies(
        durable_ledger: Ledger, durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    hosts = [a_host(durable_ledger, vcpu=100_000) for _ in range(4)]
    for n in range(100):  # 100 writes of 100 new consumers: 10,100 events and more
        durable_ledger.write_allocations([
            {"consumer_uuid": new_id(), "allocations": {hosts[n % 4]: {"VCPU": 1}},
             "expected_generation": None, "project_id": PROJECT, "user_id": USER}
            for _ in range(100)])
    assert main(["digest", "--url", durable_url, "--json"]) == 0
    saved = tmp_path / "digest.json"
    saved.write_text(capsys.readouterr().out)
    assert json.loads(saved.read_text())["position"] >= 10_000
    assert main(["audit", "--url", durable_url, "--digest", str(saved),
                 "--projections", "off"]) == 0
    assert "No findings" in capsys.readouterr().out
