"""The command line: ``allocation-ledger projections ...`` and the two scripts, their
output, their progress bar, and their clean stops on SIGINT and SIGTERM."""

from __future__ import annotations

import io
import signal
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main
from allocation_ledger.cli.output import ProgressBar
from allocation_ledger.projections.readmodels import ReadModels, ledger_position
from tests.builders import a_host, an_instance
from tests.projections.conftest import LargeLedger
from tests.projections.expected import folded, stored
from tests.projections.processes import start_script, wait_until
from tests.projections.test_crashes import catching_up, copy_of


def test_rebuild_then_status_print_positions_and_counts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        an_instance(ledger, {a_host(ledger): {"VCPU": 1}})
        head = ledger_position(ledger)
    assert main(["projections", "rebuild", "--url", url]) == 0
    out = capsys.readouterr().out
    assert f"host_usage   position {head} of {head}" in out
    assert f"{head} events in" in out
    assert "proj_allocations                 1 rows" in out
    assert main(["projections", "status", "--url", url, "--name", "devices"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"devices      position {head} of {head} (behind by 0)")


def test_an_unknown_projection_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    assert main(["projections", "resume", "--url", url, "--name", "hosts"]) == 2
    assert "unknown projection hosts: choose from host_usage" in capsys.readouterr().err


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_on_a_terminal_only() -> None:
    terminal, piped = Terminal(), io.StringIO()
    for stream in (terminal, piped):
        bar = ProgressBar(stream, "rebuild")
        bar(500, 1000)
        bar(1000, 1000)
        bar.done()
    drawn = terminal.getvalue()
    assert drawn.startswith(f"\rrebuild [{'#' * 15}{'.' * 15}]  50% 500/1,000 events ")
    assert f"\rrebuild [{'#' * 30}] 100% 1,000/1,000 events " in drawn
    assert drawn.endswith("/s in 0:00:00\n")
    assert piped.getvalue() == ""


def test_follow_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger, ReadModels.of(ledger) as read:
        an_instance(ledger, {a_host(ledger): {"VCPU": 1}})
        follower = start_script("run_projections.py", "--url", url, "--poll-interval", "0.05")
        read.wait(ledger_position(ledger), timeout=30)
        an_instance(ledger, {a_host(ledger): {"VCPU": 1}})
        read.wait(ledger_position(ledger), timeout=30)
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=30)
        assert follower.returncode == 0, err
        assert f"stopped at host_usage {ledger_position(ledger)}" in err
        assert stored(read.engine) == folded(ledger)


def test_a_rebuild_stopped_by_sigterm_keeps_its_batches_and_resumes(
        large_ledger: LargeLedger, tmp_path: Path) -> None:
    with copy_of(large_ledger, "sqlite", tmp_path) as url, open_ledger(url) as ledger, \
            ReadModels.of(ledger) as read:
        before = read.positions()
        rebuild = start_script("rebuild_projections.py", "--url", url, "--batch-size", "20")
        assert wait_until(lambda: catching_up(read, before, large_ledger.head), 60)
        rebuild.terminate()
        out, err = rebuild.communicate(timeout=30)
        assert rebuild.returncode == 128 + signal.SIGTERM, err
        stopped = read.positions()
        assert "position" in out
        assert set(stopped.values()) <= large_ledger.command_ends
        assert min(stopped.values()) < large_ledger.head
        read.resume()
        assert stored(read.engine) == folded(ledger)
