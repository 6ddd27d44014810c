"""Prometheus metrics: commands, refusals by kind and append latency counted in an
instrumented process; head, migrations in flight and stale ones, and projection lag read
at each scrape; the text served over HTTP and printed by ``allocation-ledger metrics``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from allocation_ledger import InsufficientCapacity, open_ledger
from allocation_ledger.cli import main
from allocation_ledger.cli.metrics import samples
from allocation_ledger.metrics import LedgerMetrics, instrument
from allocation_ledger.projections.readmodels import ReadModels
from tests.audit.conftest import at, frozen
from tests.builders import PROJECT, USER, a_host, new_id


def test_commands_refusals_and_appends_are_counted(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        metrics = instrument(ledger.store, stale_after=600)
        host = a_host(ledger, vcpu=2, memory_mb=None)
        vm = new_id()
        gen = ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT,
                           user_id=USER).generation
        with pytest.raises(InsufficientCapacity):
            ledger.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
        with frozen(ledger, at(0)):
            ledger.swap(vm, new_id(), gen or 0, kind="migration")
        found = samples(metrics.exposition())
    assert found["ledger_commands_total"] == 3  # register, claim, swap
    assert found['ledger_refusals_total{kind="InsufficientCapacity"}'] == 1
    assert found["ledger_append_seconds_count"] == 3
    assert found["ledger_migrations_in_flight"] == 1
    assert found["ledger_stale_migrations"] == 1  # started at 2024-05-01: long ago
    assert found["ledger_head_position"] > 0


def test_projection_lag_is_served_over_http(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger, \
            ReadModels.of(ledger) as read:
        a_host(ledger)
        read.resume()
        seen = ledger.store.recorder.max_notification_id()
        a_host(ledger)  # its events, its name and its command record: the read models have
        # not seen them
        head = ledger.store.recorder.max_notification_id()
        assert head is not None and seen is not None and head - seen == 4
        metrics = LedgerMetrics(ledger.store, positions=read.positions)
        server = metrics.serve(0)
        try:
            port = server.server_port
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                found = samples(r.read().decode())
        finally:
            server.shutdown()
    assert found["ledger_head_position"] == head
    assert found['ledger_projection_lag_events{projection="host_usage"}'] == 4
    assert found['ledger_projection_position{projection="host_usage"}'] == head - 4


def test_the_metrics_command_prints_text_or_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        a_host(ledger)
    assert main(["metrics", "--url", url]) == 0
    assert "# TYPE ledger_stale_migrations gauge" in capsys.readouterr().out
    assert main(["metrics", "--url", url, "--json", "--stale-after", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["ledger_stale_migrations"] == 0


def test_the_metrics_command_shows_projection_lag_and_no_counters(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command runs no commands: its counters could only read 0, so they are left out
    (the server's /metrics has them); the read models' lag is shown once they are built."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        a_host(ledger)
    assert main(["metrics", "--url", url, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert not any(name.startswith("ledger_projection") for name in before)  # never built
    with open_ledger(url) as ledger, ReadModels.of(ledger) as read:
        read.resume()
        a_host(ledger)  # 4 events the read models have not seen
        head = ledger.store.recorder.max_notification_id()
    assert main(["metrics", "--url", url, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found['ledger_projection_lag_events{projection="host_usage"}'] == 4
    assert found["ledger_head_position"] == head
    assert not any(name.startswith(("ledger_commands", "ledger_refusals", "ledger_retries",
                                    "ledger_append")) for name in found)


def test_the_metrics_command_refuses_a_projections_url_without_read_models(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        a_host(ledger)
    (tmp_path / "reports.db").touch()
    assert main(["metrics", "--url", url,
                 "--projections-url", f"sqlite:///{tmp_path / 'reports.db'}"]) == 1
    assert "never built" in capsys.readouterr().err
