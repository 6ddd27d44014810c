"""Repairing leaked migrations from the command line: a dry run changes nothing, the real
run leaves the audit clean and the instances where the choice puts them, and the history
says who repaired what and why."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.cli import main
from tests.audit.conftest import at, frozen
from tests.builders import PROJECT, USER, a_host, new_id


@pytest.fixture
def leaky(durable_url: str) -> Iterator[tuple[Ledger, dict[str, str]]]:
    """Three moves left in flight an hour ago (a destination claimed for two of them), one
    finished, and one started just now."""
    with open_ledger(durable_url) as ledger:
        src, dst = a_host(ledger, vcpu=16), a_host(ledger, vcpu=16)
        moves: dict[str, str] = {}
        with frozen(ledger, at(0)) as clock:
            for i in range(4):
                vm, migration = new_id(), new_id()
                gen = ledger.claim(vm, {src: {"VCPU": 2}}, None, project_id=PROJECT,
                                   user_id=USER).generation
                ledger.swap(vm, migration, gen or 0, kind="resize")
                if i < 3:
                    ledger.claim(vm, {dst: {"VCPU": 1}}, None, project_id=PROJECT,
                                 user_id=USER)
                if i == 0:
                    ledger.confirm(migration, ledger.migration(migration).generation or 0)
                else:
                    moves[migration] = vm
            clock.move_to(at(120))
        fresh_vm = new_id()
        gen = ledger.claim(fresh_vm, {src: {"VCPU": 1}}, None, project_id=PROJECT,
                           user_id=USER).generation
        ledger.swap(fresh_vm, new_id(), gen or 0, kind="migration")
        yield ledger, moves


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def stale_warnings(capsys: pytest.CaptureFixture[str], url: str) -> list[str]:
    code, out = cli(capsys, "audit", "--url", url, "--json", "--stale-after", "3600",
                    "--projections", "off")
    assert code == 0
    return sorted(f["ids"]["migration_uuid"] for f in json.loads(out)["findings"])


def test_dry_run_changes_nothing_and_the_real_run_leaves_the_audit_clean(
        leaky: tuple[Ledger, dict[str, str]], durable_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger, moves = leaky
    assert stale_warnings(capsys, durable_url) == sorted(moves)
    head = ledger.store.recorder.max_notification_id()

    code, out = cli(capsys, "repair", "--url", durable_url, "--stale-after", "3600",
                    "--action", "revert", "--dry-run", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"] is True
    assert {(r["migration_uuid"], r["outcome"]) for r in plan["repairs"]} == {
        (m, "planned") for m in moves}
    assert ledger.store.recorder.max_notification_id() == head

    code, out = cli(capsys, "repair", "--url", durable_url, "--stale-after", "3600",
                    "--action", "revert", "--actor", "alice", "--reason", "ticket 42")
    assert code == 0 and "3 migration(s) to revert" in out
    assert stale_warnings(capsys, durable_url) == []
    for migration, vm in moves.items():
        assert ledger.migration(migration).status == "reverted"
        assert [rc for by in ledger.consumer(vm).allocations.values() for rc in by] == ["VCPU"]
        assert sum(ledger.consumer(vm).allocations[p]["VCPU"]
                   for p in ledger.consumer(vm).allocations) == 2  # its source again
    assert len(ledger.migrations_in_flight()) == 1  # the fresh one is left alone

    migration = next(iter(moves))
    code, out = cli(capsys, "history", "migration", migration[:13], "--url", durable_url,
                    "--json")
    entries = json.loads(out)
    [reverted] = [e for e in entries if e["event"] == "Migration.Reverted"]
    assert (reverted["actor"], reverted["reason"]) == ("alice", "ticket 42")
    assert reverted["request_id"].startswith("repair-")
    assert {e["request_id"] for e in entries if e["position"] >= reverted["position"]} == {
        reverted["request_id"]}  # the instance's hand-back is the same command


def test_named_migrations_are_confirmed_and_a_refusal_is_reported(
        leaky: tuple[Ledger, dict[str, str]], durable_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger, moves = leaky
    first, second = list(moves)[:2]
    code, out = cli(capsys, "repair", first[:8], second, "--url", durable_url,
                    "--action", "confirm")
    assert code == 0
    assert [ledger.migration(m).status for m in (first, second)] == ["confirmed"] * 2
    code, out = cli(capsys, "repair", first, "--url", durable_url, "--action", "revert",
                    "--json")
    [refused] = json.loads(out)["repairs"]
    assert (code, refused["outcome"], refused["error"]["error"]) == (
        1, "refused", "InvalidTransition")
    assert ledger.migration(first).status == "confirmed"


def test_named_consumers_are_released_with_who_and_why(
        leaky: tuple[Ledger, dict[str, str]], durable_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger, moves = leaky
    migration, vm = next(iter(moves.items()))
    head = ledger.store.recorder.max_notification_id()
    code, out = cli(capsys, "repair", vm[:12], "--url", durable_url, "--action", "release",
                    "--dry-run", "--json")
    [planned] = json.loads(out)["releases"]
    assert (code, planned["outcome"]) == (0, "planned")
    assert ledger.store.recorder.max_notification_id() == head

    code, out = cli(capsys, "repair", vm, "--url", durable_url, "--action", "release",
                    "--reason", "deleted in nova")
    assert code == 0 and "1 consumer(s) to release" in out
    assert ledger.consumer(vm).generation is None  # holds nothing
    assert ledger.migration(migration).status == "aborted"  # its move went with it
    code, out = cli(capsys, "history", "consumer", vm, "--url", durable_url, "--json")
    last = json.loads(out)[-1]
    assert (last["event"], last["reason"]) == ("Consumer.AllocationsReleased",
                                               "deleted in nova")
    code, out = cli(capsys, "repair", vm, "--url", durable_url, "--action", "release",
                    "--json")
    assert json.loads(out)["releases"][0]["outcome"] == "nothing held"
