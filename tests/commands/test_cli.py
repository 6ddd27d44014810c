"""``allocation-ledger command ID [--json]``: what became of a command, from the shell."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.cli import main
from tests.builders import PROJECT, USER, a_host, new_id


@pytest.fixture
def durable_ledger(durable_url: str) -> Iterator[Ledger]:
    with open_ledger(durable_url) as opened:
        yield opened


def test_a_command_is_looked_up_by_its_id(durable_ledger: Ledger, durable_url: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    host, vm = a_host(durable_ledger), new_id()
    durable_ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER,
                         command_id="req-7", request={"actor": "alice", "request_id": "r7"})

    assert main(["command", "req-7", "--url", durable_url]) == 0
    out = capsys.readouterr().out
    assert "claim, applied at position" in out and "by alice (request r7)" in out
    assert f"consumer  {vm}  left at generation 1" in out

    assert main(["command", "req-7", "--url", durable_url, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["applied"], found["name"], found["events"]) == (True, "claim", 2)
    assert {(s["kind"], s["uuid"], s["version"]) for s in found["streams"]} == {
        ("consumer", vm, 1), ("provider", host, 3)}


def test_an_unknown_command_exits_1(durable_ledger: Ledger, durable_url: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["command", "never-sent", "--url", durable_url]) == 1
    assert "not applied" in capsys.readouterr().out
    assert main(["command", "never-sent", "--url", durable_url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["applied"] is False


def test_a_missing_ledger_is_not_created_by_a_look_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    assert main(["command", "req-1", "--url", f"sqlite:///{missing}"]) == 1
    assert "no ledger at" in capsys.readouterr().err
    assert not missing.exists()
