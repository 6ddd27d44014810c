"""The four tamperings the audit let through before the hash chain (issue 12), each made by
plain SQL the way an intruder with the database's rights would, read models rebuilt after:
``audit --digest`` now exits 1 and names the position; a forged append is found by the key
alone; read models of another history refuse to resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters import chain
from allocation_ledger.audit import findings as f
from allocation_ledger.cli import main
from projections.readmodels import ReadModels
from tests.audit import tampering
from tests.audit.tampering import EventsTable, Row, rechain
from tests.builders import a_host, an_instance


def record_digest(url: str, path: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """``digest --json`` saved to ``path``; its position."""
    capsys.readouterr()
    assert main(["digest", "--url", url, "--json"]) == 0
    path.write_text(capsys.readouterr().out)
    position: int = json.loads(path.read_text())["position"]
    return position


def audited(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and output of ``audit``."""
    capsys.readouterr()
    code = main(["audit", "--url", url, *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def rebuild(url: str) -> None:
    """Rebuild every read model from the ledger as it now is."""
    with ReadModels.open(url) as read:
        read.rebuild()


def command_rows(rows: list[Row], command: int) -> list[Row]:
    """The rows of the ``command``-th command (0 first), by the command id they carry."""
    ids = list(dict.fromkeys(json.loads(r[4])["request"]["command_id"] for r in rows))
    wanted = ids[command]
    return [r for r in rows if json.loads(r[4])["request"]["command_id"] == wanted]


@pytest.fixture
def two_claims(durable_url: str) -> Iterator[tuple[Ledger, str, str]]:
    """A host with two instances (4 and then 2 VCPU), the read models built."""
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16, memory_mb=None)
        vm = an_instance(ledger, {host: {"VCPU": 4}}).consumer_uuid
        an_instance(ledger, {host: {"VCPU": 2}})
        rebuild(durable_url)
        yield ledger, host, vm


def test_an_amount_changed_consistently_with_the_later_history_is_found_by_the_digest(
        two_claims: tuple[Ledger, str, str], durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    digest = tmp_path / "digest.json"
    position = record_digest(durable_url, digest, capsys)
    table = EventsTable(durable_url)
    rows = table.rows()
    edits = {b'"VCPU":4}': b'"VCPU":3}', b'"usages":{"VCPU":6}': b'"usages":{"VCPU":5}'}
    tampered = []
    for row in rows:
        state = row[4]
        if row[0] > 2:  # not the inventory
            for old, new in edits.items():
                state = state.replace(old, new)
        tampered.append(tampering.with_state(row, state))
    assert tampered != rows
    table.replace(rechain(tampered))
    table.delete_snapshots()
    rebuild(durable_url)
    assert audited(durable_url, capsys)[0] == 0  # consistent: only the digest can tell
    code, out = audited(durable_url, capsys, "--digest", str(digest))
    assert code == 1
    assert f.DIGEST_MISMATCH in out and f"#{position}" in out


def test_a_deleted_command_is_found_by_the_digest(
        two_claims: tuple[Ledger, str, str], durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    digest = tmp_path / "digest.json"
    record_digest(durable_url, digest, capsys)
    table = EventsTable(durable_url)
    rows = table.rows()
    first_claim = command_rows(rows, 1)
    kept = [r for r in rows if r not in first_claim]
    table.replace(kept)  # the chain left as it was: it breaks after the hole
    code, out = audited(durable_url, capsys, "--projections", "off")
    assert code == 1 and f"#{first_claim[-1][0] + 1}" in out and f.CHAIN_BROKEN in out
    later = [tampering.with_state(r, r[4].replace(b'"VCPU":6', b'"VCPU":2')) for r in kept]
    table.replace(rechain(later))  # made consistent, read models rebuilt
    rebuild(durable_url)
    code, out = audited(durable_url, capsys, "--digest", str(digest))
    assert code == 1 and f.DIGEST_MISMATCH in out


def test_a_truncated_tail_is_found_and_read_models_ahead_refuse(
        two_claims: tuple[Ledger, str, str], durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, host, _ = two_claims
    digest = tmp_path / "digest.json"
    position = record_digest(durable_url, digest, capsys)
    table = EventsTable(durable_url)
    rows = table.rows()
    last = command_rows(rows, 2)
    table.replace(rows[:-len(last)])  # cut at a command boundary
    code, out = audited(durable_url, capsys)  # no digest: the read models are ahead
    assert code == 1 and f.PROJECTION_AHEAD in out and "rebuild" in out
    code, out = audited(durable_url, capsys, "--digest", str(digest), "--projections", "off")
    assert code == 1 and f.DIGEST_MISSING in out and f"#{position}" in out
    capsys.readouterr()
    assert main(["projections", "resume", "--url", durable_url]) == 1
    assert "rebuild" in capsys.readouterr().err
    with open_ledger(durable_url) as again:  # new commands take the cut positions (SQLite)
        an_instance(again, {host: {"VCPU": 1}})
        an_instance(again, {host: {"VCPU": 1}})
    assert main(["projections", "resume", "--url", durable_url]) == 1
    # SQLite gives the cut positions to the new events; PostgreSQL's sequence moves on
    assert ("another history" if "sqlite" in durable_url else "no event there") in \
        capsys.readouterr().err
    assert main(["projections", "status", "--url", durable_url]) == 1
    assert main(["projections", "rebuild", "--url", durable_url, "--quiet"]) == 0
    assert main(["projections", "resume", "--url", durable_url]) == 0


def test_a_forged_consistent_append_is_found_with_a_key(
        durable_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    key_file = tmp_path / "chain.key"
    key_file.write_bytes(b"a key the database never sees\n")
    monkeypatch.setenv(chain.KEY_FILE_ENV_VAR, str(key_file))
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16, memory_mb=None)
        vm = an_instance(ledger, {host: {"VCPU": 4}}).consumer_uuid
        assert audited(durable_url, capsys)[0] == 0
        # a consistent command (the provider's usage and the consumer's allocation agree),
        # mapped as the store would, appended by SQL with the chain an intruder can compute
        same = tampering.edit()
        pending = [tampering.usage(ledger, host, {"VCPU": 6}, consumers=[vm], request=same),
                   tampering.holding(ledger, vm, {host: {"VCPU": 6}}, request=same)]
        stored = [ledger.store.mapper.to_stored_event(e)
                  for a in pending for e in a.collect_events()]
    table = EventsTable(durable_url)
    rows = table.rows()
    forged: list[Row] = [(rows[-1][0] + 1 + n, e.originator_id, e.originator_version, e.topic,
                          e.state, None) for n, e in enumerate(stored)]
    table.replace(rechain(rows + forged))  # unkeyed: the intruder has no key
    code, out = audited(durable_url, capsys, "--projections", "off")
    assert code == 1 and f.CHAIN_BROKEN in out and f"#{forged[0][0]}" in out
    assert "stream-order" not in out and f.USAGE_MISMATCH not in out  # consistent otherwise
    monkeypatch.delenv(chain.KEY_FILE_ENV_VAR)  # without the key the store will not open
    capsys.readouterr()
    assert main(["audit", "--url", durable_url]) == 1
    assert "keyed" in capsys.readouterr().err
    monkeypatch.setenv(chain.KEY_ENV_VAR, "6b" * 32)  # nor with another key
    assert main(["audit", "--url", durable_url]) == 1
    assert "not the key" in capsys.readouterr().err
