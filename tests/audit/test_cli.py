"""The audit, history and state-at commands, on stores the CLI opens itself."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from allocation_ledger import Ledger
from allocation_ledger.audit import findings as f
from allocation_ledger.cli import main
from allocation_ledger.cli.output import ProgressBar
from tests.audit import tampering
from tests.audit.conftest import at, frozen
from tests.builders import PROJECT, USER, a_host, new_id

ROOT = Path(__file__).resolve().parents[2]
WHO = {"actor": "alice", "request_id": "req-9", "reason": "tenant asked for more"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and stdout of one CLI call."""
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_audit_exits_1_and_lists_every_violation(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    host = a_host(durable_ledger, vcpu=8, memory_mb=None)
    vm = new_id()
    durable_ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER)
    [bad] = tampering.save(durable_ledger, tampering.usage(durable_ledger, host, {"VCPU": 5}))
    same = tampering.edit()
    over = tampering.save(
        durable_ledger,
        tampering.usage(durable_ledger, host, {"VCPU": 12}, consumers=[vm], request=same),
        tampering.holding(durable_ledger, vm, {host: {"VCPU": 9}}, request=same))

    code, out = run(capsys, "audit", "--url", durable_url, "--json")
    report = json.loads(out)
    assert code == 1
    assert (report["ok"], report["errors"]) == (False, 2)
    assert [(x["kind"], x["position"]) for x in report["findings"]] == [
        (f.USAGE_MISMATCH, bad), (f.OVER_CAPACITY, over[0])]
    assert report["findings"][0]["numbers"] == {"usage": 5, "allocated": 2, "difference": 3}

    code, out = run(capsys, "audit", "--url", durable_url)
    assert code == 1
    assert "2 violation(s)" in out and f"#{bad}" in out and "usage-mismatch" in out
    # Up to the position before the bad write, the ledger was sound.
    assert run(capsys, "audit", "--url", durable_url, "--to-position", str(bad - 1))[0] == 0


def test_a_stale_migration_is_a_warning_not_a_failure(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with frozen(durable_ledger, at(0)):
        host = a_host(durable_ledger, memory_mb=None)
        vm = durable_ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT,
                                  user_id=USER)
        migration = new_id()
        durable_ledger.swap(vm.consumer_uuid, migration, 1, kind="migration")
    code, out = run(capsys, "audit", "--url", durable_url, "--json", "--stale-after", "600")
    report = json.loads(out)
    assert (code, report["errors"], report["warnings"]) == (0, 0, 1)
    [stale] = report["findings"]
    assert (stale["kind"], stale["severity"], stale["ids"]["migration_uuid"]) == (
        f.STALE_MIGRATION, f.WARNING, migration)
    assert stale["time"] == at(0).isoformat()


def test_history_shows_when_who_and_why(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with frozen(durable_ledger, at(0)) as clock:
        host = a_host(durable_ledger, vcpu=8, memory_mb=None)
        vm = new_id()
        clock.move_to(at(5))
        durable_ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER,
                             request=WHO)
        clock.move_to(at(6))
        durable_ledger.release(vm, 1, request={"actor": "bob"})

    code, out = run(capsys, "history", "consumer", vm, "--url", durable_url)
    header, created, released = out.splitlines()
    assert code == 0
    assert header.split() == ["POSITION", "TIME", "ACTOR", "REQUEST", "CHANGE", "(REASON)"]
    assert header.index("TIME") == created.index("2024-05-01T10:05:00+00:00")
    assert "2024-05-01T10:05:00+00:00  alice" in created
    assert "req-9" in created and "(tenant asked for more)" in created
    assert "VCPU 2 on" in created and "VCPU 2->0" in released and "bob" in released

    code, out = run(capsys, "history", "provider", host, "--url", durable_url, "--json")
    events = json.loads(out)  # one document
    assert [e["event"] for e in events] == ["Provider.Registered", "Provider.InventoriesSet",
                                            "Provider.AllocationsChanged",
                                            "Provider.AllocationsChanged"]
    assert (events[2]["actor"], events[2]["reason"]) == ("alice", WHO["reason"])
    assert events[2]["changes"]["usages"] == {"VCPU": [0, 2]}


def test_the_ledger_as_json_lines_between_positions_or_times(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with frozen(durable_ledger, at(0)) as clock:
        host = a_host(durable_ledger, vcpu=8, memory_mb=None)  # 1-4 at minute 0
        for minute in (10, 20, 30):
            clock.move_to(at(minute))
            durable_ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT,
                                 user_id=USER, request=WHO)  # three events each
    positions = [n.id for n in durable_ledger.store.recorder.select_notifications(1, 100)]

    _, out = run(capsys, "history", "ledger", "--url", durable_url,
                 "--from-position", str(positions[5]), "--to-position", str(positions[6]))
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["position"] for r in lines] == positions[5:7]
    assert lines[0]["event"] == "Consumer.Created" and "consumer_uuid" in lines[0]
    assert lines[1]["provider_uuid"] == host and lines[1]["data"]["usages"] == {"VCPU": 1}
    assert (lines[1]["actor"], lines[1]["request_id"]) == ("alice", "req-9")

    _, out = run(capsys, "history", "ledger", "--url", durable_url,
                 "--since", at(20).isoformat(), "--until", at(25).isoformat())
    assert [json.loads(line)["position"] for line in out.splitlines()] == positions[7:10]
    _, out = run(capsys, "history", "ledger", "--url", durable_url, "--since", at(31).isoformat())
    assert out == ""


def test_state_at_a_time_or_a_position(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with frozen(durable_ledger, at(0)) as clock:
        host = a_host(durable_ledger, vcpu=8, memory_mb=None)
        vm = new_id()
        clock.move_to(at(10))
        durable_ledger.claim(vm, {host: {"VCPU": 3}}, None, project_id=PROJECT, user_id=USER)
        clock.move_to(at(20))
        durable_ledger.set_inventory(host, "VCPU", {"total": 2}, 2)  # now over capacity

    def state(*argv: str) -> dict[str, object]:
        code, out = run(capsys, "state-at", *argv, "--url", durable_url, "--json")
        assert code == 0
        found: dict[str, object] = json.loads(out)
        return found

    early = state("provider", host, "--at", "2024-05-01T10:05:00")  # naive: UTC
    late = state("provider", host, "--at", at(25).isoformat())
    assert early["provider"]["classes"]["VCPU"]["used"] == 0  # type: ignore[index]
    assert late["provider"]["classes"]["VCPU"]["over_capacity"] is True  # type: ignore[index]
    consumer = state("consumer", vm, "--position", "2")
    assert consumer["consumer"]["generation"] is None  # type: ignore[index]
    assert consumer["as_of"] == {"position": 2, "time": at(0).isoformat()}
    hosts = state("hosts", "--at", at(15).isoformat())
    assert hosts["hosts"][host][host]["classes"]["VCPU"]["used"] == 3  # type: ignore[index]

    code, out = run(capsys, "state-at", "provider", host, "--url", durable_url)
    assert code == 0 and "OVER CAPACITY" in out and "used       3 of       2" in out


def test_a_progress_bar_is_drawn_only_on_a_terminal(
    durable_ledger: Ledger, durable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    screen = io.StringIO()
    screen.isatty = lambda: True  # type: ignore[method-assign]
    bar = ProgressBar(screen, "audit", width=10)
    bar(50, 100)
    bar(100, 100)
    assert re.search(r"\raudit \[##########\] 100% 100/100 events [\d,]+/s in 0:00:00\n$",
                     screen.getvalue())
    assert screen.getvalue().startswith("\raudit [#####.....]  50% 50/100 events ")
    a_host(durable_ledger)
    assert run(capsys, "audit", "--url", durable_url)[0] == 0
    assert capsys.readouterr().err == ""  # stderr is not a terminal here


def test_scripts_audit_is_the_same_command(durable_ledger: Ledger, durable_url: str) -> None:
    a_host(durable_ledger)
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit.py"), "--url",
                           durable_url, "--json"], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == 4  # the record, registered, inventory, name
