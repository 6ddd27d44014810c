"""A ledger written before text was checked may hold a NUL, which PostgreSQL text cannot:
the read side replaces it (U+FFFD) and carries on, on every database alike; and a schema
name in a URL is a name, never SQL."""

from __future__ import annotations

import psycopg
import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit import findings as f
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import InvalidRequest
from projections import queries
from projections.reading import NUL_REPLACEMENT
from projections.readmodels import ReadModels, ledger_position
from tests.audit import tampering
from tests.builders import a_host, new_id
from tests.stores import postgres_base_url, require_postgres


def an_old_consumer_with_a_nul(ledger: Ledger, host: str) -> str:
    """A consumer stored past the input checks, as an older ledger may hold one."""
    vm = new_id()
    consumer = Consumer.create(vm, "proj\x00ect", "us\x00er", "INSTANCE",
                               {host: {"VCPU": 1}}, {}, {"reason": "before the check"})
    provider = tampering.provider(ledger, host)
    provider.trigger_event(type(provider).AllocationsChanged, consumers=[vm],
                           usages={"VCPU": 1}, holds={}, request={})
    tampering.save(ledger, consumer, provider)
    return vm


def test_a_nul_in_an_old_event_does_not_stop_the_read_side(url: str) -> None:
    with open_ledger(url) as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None, name="host-a")
        vm = an_old_consumer_with_a_nul(ledger, host)
        after = a_host(ledger, vcpu=2, memory_mb=None)
        with ReadModels.of(ledger) as read:
            report = read.rebuild()
            assert set(report.positions.values()) == {ledger_position(ledger)}
            [usage] = queries.host_usage(read.engine, host)
            assert usage.used == 1
            assert [u.used for u in queries.host_usage(read.engine, after)] == [0]
            with read.engine.connect() as conn:
                row = conn.exec_driver_sql(
                    "SELECT project_id, user_id FROM proj_consumers WHERE consumer_uuid = ?"
                    if read.engine.dialect.name == "sqlite" else
                    "SELECT project_id, user_id FROM proj_consumers WHERE consumer_uuid = %s",
                    (vm,)).one()
            assert tuple(row) == (f"proj{NUL_REPLACEMENT}ect", f"us{NUL_REPLACEMENT}er")
        # The audit replays it to the end too (and compares the rebuilt read models).
        report = audit(ledger.store)
        assert report.last_position == ledger_position(ledger)
        assert f.PROJECTION_DRIFT not in {x.kind for x in report.findings}


INJECTION = 'x";COMMIT;CREATE/**/TABLE/**/public.pwned(i/**/int);--'


@pytest.mark.postgres
def test_a_schema_name_carrying_sql_is_refused_and_runs_nothing(pg_url: str) -> None:
    base = require_postgres()

    def catalog() -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
        with psycopg.connect(base) as conn:
            # Other tests create and drop schemas of their own meanwhile: look at those the
            # injection could have made (its name, or anything it starts with).
            schemas = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'x%' "
                                   "ORDER BY 1").fetchall()
            pwned = conn.execute("SELECT schemaname, tablename FROM pg_tables "
                                 "WHERE tablename = 'pwned'").fetchall()
        return schemas, pwned

    before = catalog()
    assert before[1] == []
    with open_ledger(pg_url) as ledger, pytest.raises(InvalidRequest, match="bad schema name"):
        ReadModels.of(ledger, f"{postgres_base_url()}?schema={INJECTION}")
    with pytest.raises(InvalidRequest, match="bad schema name"):
        open_ledger(f"{postgres_base_url()}?schema={INJECTION}")
    assert catalog() == before
