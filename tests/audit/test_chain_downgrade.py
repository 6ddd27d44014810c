"""A keyed chain set back to unkeyed by someone with the tables alone: the chain table says
"unkeyed", the whole chain is recomputed without the key from the first event, history is
edited and the read models rebuilt. The key holder's audit reports it (it no longer
refuses to run), and so does an audit with a digest taken while the chain was keyed, even
without the key; every other opener with the key is still refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.adapters import chain
from allocation_ledger.audit import findings as f
from allocation_ledger.bootstrap import open_read_models
from allocation_ledger.cli import main
from tests.audit import tampering
from tests.audit.tampering import EventsTable, rechain
from tests.builders import a_host, an_instance


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command."""
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def keyed(durable_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[str, Path]]:
    """A keyed ledger (the key set), its read models built, and a digest taken: (url,
    the digest file)."""
    key_file = tmp_path / "chain.key"
    key_file.write_bytes(b"the operator's key, never in the database\n")
    monkeypatch.setenv(chain.KEY_FILE_ENV_VAR, str(key_file))
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16, memory_mb=None)
        an_instance(ledger, {host: {"VCPU": 4}})
        an_instance(ledger, {host: {"VCPU": 2}})
    with open_read_models(durable_url) as read:
        read.rebuild()
    digest = tmp_path / "digest.json"
    code, out, _ = run(capsys, "digest", "--url", durable_url, "--json")
    assert code == 0 and json.loads(out)["keyed"] is True
    digest.write_text(out)
    assert run(capsys, "audit", "--url", durable_url, "--digest", str(digest))[0] == 0
    yield durable_url, digest


def downgrade(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the intruder does, with the tables and without the key."""
    table = EventsTable(url)
    edited = [tampering.with_state(r, r[4].replace(b'"VCPU":4}', b'"VCPU":3}')
                                   .replace(b'"usages":{"VCPU":6}', b'"usages":{"VCPU":5}'))
              for r in table.rows()]
    table.replace(rechain(edited))  # the whole chain, from position 1, without a key
    table.set_unkeyed()
    table.delete_snapshots()
    monkeypatch.delenv(chain.KEY_FILE_ENV_VAR)
    with open_read_models(url) as read:
        read.rebuild()


def test_the_audit_with_the_key_reports_the_downgrade(
        keyed: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = keyed
    downgrade(url, monkeypatch)
    assert run(capsys, "audit", "--url", url)[0] == 0  # without key or digest: unseen
    monkeypatch.setenv(chain.KEY_FILE_ENV_VAR, str(tmp_path / "chain.key"))
    code, out, err = run(capsys, "audit", "--url", url)
    assert (code, err) == (1, "")  # reported, not refused
    assert f.CHAIN_DOWNGRADED in out and "#0" in out


def test_a_digest_taken_while_keyed_finds_the_downgrade_without_the_key(
        keyed: tuple[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url, digest = keyed
    position = json.loads(digest.read_text())["position"]
    downgrade(url, monkeypatch)
    code, out, err = run(capsys, "audit", "--url", url, "--digest", str(digest))
    assert (code, err) == (1, "")
    assert f.CHAIN_DOWNGRADED in out and f"#{position}" in out


@pytest.mark.parametrize("command", [["digest"], ["history", "ledger"], ["list", "providers"]])
def test_every_other_opener_with_the_key_is_refused_and_pointed_to_the_audit(
        command: list[str], keyed: tuple[str, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = keyed
    downgrade(url, monkeypatch)
    monkeypatch.setenv(chain.KEY_FILE_ENV_VAR, str(tmp_path / "chain.key"))
    code, _, err = run(capsys, *command, "--url", url)
    assert code == 1 and err.splitlines() == [err.strip()]
    assert "recomputed without the key" in err and "allocation-ledger audit" in err
    with pytest.raises(Exception, match="recomputed without the key"):
        open_ledger(url)  # nor may a writer extend it
