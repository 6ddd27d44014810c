"""``audit --digest`` as an operator uses it: digest files appended to, given twice, empty,
or not digest files at all. The audit never cries wolf (the same digest twice is one
digest; an empty ledger's digest holds) and never passes without checking a digest it
was given (a file of none, or of bytes that are not JSON digests, is one line, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import findings as f
from allocation_ledger.cli import main
from tests.builders import a_host, an_instance


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command."""
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def append_digest(url: str, path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """``digest --json >> path``; the digest."""
    code, out, _ = run(capsys, "digest", "--url", url, "--json")
    assert code == 0
    with path.open("a") as file:
        file.write(out)
    found: dict[str, str] = json.loads(out)
    return found


def audit_with(url: str, capsys: pytest.CaptureFixture[str], *files: Path,
               extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """``audit --digest F ...`` without the read models."""
    digests = [a for file in files for a in ("--digest", str(file))]
    return run(capsys, "audit", "--url", url, "--projections", "off", *digests, *extra)


@pytest.fixture
def busy_url(durable_url: str) -> str:
    """A ledger with a host and two instances."""
    ledger: Ledger
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16)
        an_instance(ledger, {host: {"VCPU": 2}})
        an_instance(ledger, {host: {"VCPU": 2}})
    return durable_url


def test_a_digest_appended_twice_with_no_write_between_is_one_digest(
        busy_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "digests.jsonl"
    first = append_digest(busy_url, saved, capsys)
    second = append_digest(busy_url, saved, capsys)
    assert first["position"] == second["position"]
    code, out, _ = audit_with(busy_url, capsys, saved)
    assert code == 0, out
    assert "No findings" in out


def test_one_file_given_twice_is_checked_once(
        busy_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "digest.json"
    append_digest(busy_url, saved, capsys)
    code, out, _ = audit_with(busy_url, capsys, saved, saved)
    assert code == 0, out


def test_two_different_digests_at_one_position_are_a_finding_there(
        busy_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "digest.json"
    digest = append_digest(busy_url, saved, capsys)
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**digest, "chain_hash": "ab" * 32}))
    code, out, _ = audit_with(busy_url, capsys, saved, forged)
    assert code == 1
    assert f"#{digest['position']}" in out and f.DIGEST_MISMATCH in out
    assert out.count(f.DIGEST_MISMATCH) == 1  # the true one still matches
    assert f.DIGEST_MISSING not in out


def test_an_empty_ledgers_digest_holds_before_and_after_writes(
        durable_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "db", "init", "--url", durable_url)[0] == 0
    saved = tmp_path / "empty.json"
    assert append_digest(durable_url, saved, capsys)["position"] == 0
    code, out, _ = audit_with(durable_url, capsys, saved)
    assert code == 0, out
    with open_ledger(durable_url) as ledger:
        a_host(ledger, vcpu=4)
    code, out, _ = audit_with(durable_url, capsys, saved)
    assert code == 0, out


def test_a_digest_below_a_partial_audit_is_noted_not_reported_missing(
        busy_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "digest.json"
    position = int(append_digest(busy_url, saved, capsys)["position"])
    with open_ledger(busy_url) as ledger:
        a_host(ledger, vcpu=4)
    code, out, _ = audit_with(busy_url, capsys, saved,
                              extra=("--from-position", str(position + 1)))
    assert code == 0, out
    assert f"digest at #{position} not checked: before the audited range" in out


@pytest.mark.parametrize("content", [
    b"[]", b"", b"\n\n",
    b"\xff\xfe\x00binary\x80",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"position": 1e400, "chain_hash": "00"}',
    b'{"position": -3, "chain_hash": "' + b"00" * 32 + b'"}',
    b'{"position": 3, "chain_hash": "00"}',
    b"[1, 2]",
], ids=["empty-list", "empty-file", "blank-lines", "binary", "deeply-nested",
        "infinite-position", "negative-position", "short-hash", "numbers"])
def test_a_file_of_no_digest_is_one_line_and_exit_2(
        content: bytes, busy_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "digest.json"
    bad.write_bytes(content)
    code, out, err = audit_with(busy_url, capsys, bad)
    assert code == 2
    assert out == ""  # nothing audited, no "No findings"
    assert len(err.strip().splitlines()) == 1
    assert "unexpected" not in err and str(bad) in err
