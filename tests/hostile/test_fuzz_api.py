"""Generated bad input at every argument and nesting position of every public command and
query, on the in-memory store, SQLite and PostgreSQL: only :class:`LedgerError` subclasses
ever escape, and a refused call appends nothing; after the run a rebuild of the read models
(on each store) holds exactly what the replay of the ledger holds. Accepted text (any
printable Unicode) round-trips through the PostgreSQL read models.

Seeded (``derandomize``): every CI run tries the same examples, and a failure reproduces
(generation only, no shrinking, to keep the run short: a failure prints the example and its
blob for ``@reproduce_failure``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import LedgerError
from allocation_ledger.projections import tables
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import new_id
from tests.hostile.fuzzing import BAD, CALLS, QUERIES, World, paths, spoiled
from tests.projections.expected import folded, stored
from tests.stores import store_url

#: Examples per store: thousands per CI run, a few seconds each.
EXAMPLES = {"memory": 1200, "sqlite": 1200, "postgres": 800}
READ_EXAMPLES = 300
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                phases=[Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fuzzed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Ledger]]:
    """A store kind and a ledger over a fresh store of it."""
    with store_url(request.param, tmp_path) as url, open_ledger(url) as ledger:
        yield request.param, ledger


def head(ledger: Ledger) -> int:
    """The ledger's last position: unchanged means nothing was appended."""
    return ledger.store.recorder.max_notification_id() or 0


def call_spoiled(target: Any, name: str, valid: dict[str, Any], data: st.DataObject) -> str:
    """Call ``target.name`` with one position of ``valid`` spoiled (or none); the outcome."""
    where = data.draw(st.sampled_from([None, *paths(valid)]), label="position")
    kwargs = valid if where is None else spoiled(valid, where, data.draw(BAD, label="bad"))
    try:
        getattr(target, name)(**kwargs)
    except LedgerError as err:
        return type(err).__name__
    return "accepted"


def test_only_ledger_errors_escape_and_refusals_append_nothing(
        fuzzed: tuple[str, Ledger]) -> None:
    kind, ledger = fuzzed
    world = World.build(ledger)
    outcomes: Counter[str] = Counter()

    @settings(FUZZ, max_examples=EXAMPLES[kind])
    @given(name=st.sampled_from(sorted(CALLS)), data=st.data())
    def one_call(name: str, data: st.DataObject) -> None:
        before = head(ledger)
        outcome = call_spoiled(ledger, name, CALLS[name](world), data)
        outcomes[outcome] += 1
        if outcome != "accepted":
            assert head(ledger) == before, f"{name} refused ({outcome}) but appended"

    one_call()
    print(f"{kind}: {sum(outcomes.values())} calls: {dict(outcomes.most_common())}")
    assert outcomes["InvalidRequest"] > outcomes.total() / 3  # the bad values did reach
    assert outcomes["accepted"] > 0
    with ReadModels.of(ledger) as read:  # what was accepted, the read side holds exactly
        read.rebuild()
        assert stored(read.engine) == folded(ledger)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def with_reads(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    """A ledger with its read side."""
    with store_url(request.param, tmp_path) as url, open_ledger(url, read_side=True) as ledger:
        yield ledger


def test_the_read_side_queries_refuse_bad_input_as_ledger_errors(with_reads: Ledger) -> None:
    world = World.build(with_reads)

    @settings(FUZZ, max_examples=READ_EXAMPLES)
    @given(name=st.sampled_from(sorted(QUERIES)), data=st.data())
    def one_query(name: str, data: st.DataObject) -> None:
        call_spoiled(with_reads.reads, name, QUERIES[name](world), data)

    one_query()


#: Printable text of every script, the ledger's own punctuation, quotes and backslashes.
STORED_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]),
                      min_size=1, max_size=60)


@pytest.mark.postgres
def test_accepted_text_round_trips_through_the_postgres_read_models(pg_url: str) -> None:
    accepted: dict[str, tuple[str, str, str, list[str]]] = {}
    with open_ledger(pg_url) as ledger:
        host = new_id()
        ledger.register_provider(host, "text-host", inventories={"VCPU": {"total": 10**6}})

        @settings(FUZZ, max_examples=150)
        @given(project=STORED_TEXT, user=STORED_TEXT, name=STORED_TEXT,
               devices=st.lists(STORED_TEXT, min_size=1, max_size=3, unique=True),
               reason=STORED_TEXT)
        def one_claim(project: str, user: str, name: str, devices: list[str],
                      reason: str) -> None:
            assume(name not in {n for _, _, n, _ in accepted.values()})  # names are unique
            gpu, vm = new_id(), new_id()
            ledger.register_provider(gpu, name, parent_uuid=host,
                                     request={"reason": reason, "actor": user})
            ledger.set_devices(gpu, "VGPU", devices, 0)
            ledger.claim(vm, {gpu: {"VGPU": 1}}, None, project_id=project, user_id=user,
                         request={"actor": name, "request_id": project, "reason": reason})
            accepted[vm] = (project, user, name, devices)

        one_claim()
        with ReadModels.of(ledger) as read:
            read.rebuild()
            consumers, providers, holders = (
                tables.consumers.c, tables.providers.c, tables.device_holders.c)
            with read.engine.connect() as conn:
                people = {r.consumer_uuid: (r.project_id, r.user_id) for r in conn.execute(
                    select(consumers.consumer_uuid, consumers.project_id, consumers.user_id))}
                names = {r.name for r in conn.execute(select(providers.name))}
                held = {r.holder: r.device_id for r in conn.execute(
                    select(holders.holder, holders.device_id).where(holders.holder.isnot(None)))}
                devices = {r.device_id for r in conn.execute(select(holders.device_id))}
    for vm, (project, user, name, ids) in accepted.items():
        assert people[vm] == (project, user)
        assert name in names
        assert held[vm] == sorted(ids)[0]
        assert set(ids) <= devices
