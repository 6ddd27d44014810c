"""A ledger with traits and aggregates audits clean and replays exactly: custom trait
streams are known to the replay (their stream id is checked as the others'), provider
trait and aggregate events are ordinary provider events."""

from __future__ import annotations

from allocation_ledger import open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.audit.history import ledger_records
from allocation_ledger.audit.pointintime import replay
from allocation_ledger.audit.state import fingerprint
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.trait import Trait
from tests.builders import a_host, new_id


def test_traits_and_aggregates_audit_clean_and_replay_exactly() -> None:
    with open_ledger("memory://") as ledger:
        ledger.create_trait("CUSTOM_X")
        ledger.delete_trait("CUSTOM_X")
        ledger.create_trait("CUSTOM_X")
        host = a_host(ledger)
        child = a_host(ledger, parent=host, vcpu=2)
        view = ledger.set_traits(host, ["CUSTOM_X", "HW_CPU_X86_AVX2"],
                                 ledger.provider(host).generation)
        view = ledger.set_aggregates(host, [new_id()], view.generation)
        ledger.set_aggregates(host, [], None)
        ledger.claim(new_id(), {host: {"VCPU": 2}}, None, project_id="p", user_id="u")
        ledger.set_traits(child, ["CUSTOM_X"], ledger.provider(child).generation)
        ledger.delete_provider(child, ledger.provider(child).generation)

        report = audit(ledger.store)
        state = replay(ledger.store, every_consumer=True)
        records = list(ledger_records(ledger.store))

        assert report.findings == []
        traits = [a for a in state.aggregates.values() if isinstance(a, Trait)]
        assert [(t.name, t.exists, t.version) for t in traits] == [("CUSTOM_X", True, 3)]
        for stream, aggregate in state.aggregates.items():
            assert fingerprint(aggregate) == fingerprint(ledger.store.repository.get(stream))
        replayed = state.providers[host]
        assert (replayed.traits, replayed.aggregates) == (["CUSTOM_X", "HW_CPU_X86_AVX2"], [])
        assert isinstance(replayed, Provider)
        named = {r["event"]: r for r in records}
        assert named["Trait.Created"]["trait"] == "CUSTOM_X"
        assert "unknown" not in named["Trait.Recreated"]
