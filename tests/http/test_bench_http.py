"""The HTTP benchmark's smallest run works and the claims it counts were really made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.http.server import spawned
from benchmarks import over_http
from benchmarks.over_http import Figure, measure, report
from benchmarks.scratch import scratch_store


def test_the_smallest_run_prints_ratios(tmp_path: Path) -> None:
    figures = measure(["sqlite"], 20, [1, 2], "postgresql://unused", tmp_path)
    assert [(f.store, sorted(f.over_http)) for f in figures] == [("sqlite", [1, 2])]
    assert figures[0].in_process > 0 and all(r > 0 for r in figures[0].ratios().values())
    assert "HTTP x2" in report(figures)


def test_workers_are_measured_in_turn(tmp_path: Path) -> None:
    figures = measure(["sqlite"], 10, [2], "postgresql://unused", tmp_path, ("on",), (1, 2))
    assert [f.store for f in figures] == ["sqlite/group-commit-on/workers-1",
                                          "sqlite/group-commit-on/workers-2"]
    assert "sqlite/group-commit-on/workers-2" in report(figures)


def test_each_claim_over_http_is_in_the_ledger(tmp_path: Path) -> None:
    with scratch_store("sqlite", tmp_path, "postgresql://unused", "t") as url:
        with spawned(url) as port:
            over_http.over_http(port, 2, 10)
        with open_ledger(url, read_side=True) as ledger:
            hosts = ledger.reads.providers()
            assert len(hosts) == 2
            assert [ledger.provider(h.provider_uuid).usages for h in hosts] == [
                {"VCPU": 5}, {"VCPU": 5}]
    assert list(tmp_path.iterdir()) == []  # the store's files, its lock files too, are gone


def test_a_refusal_stops_the_run_with_its_status(tmp_path: Path) -> None:
    with scratch_store("sqlite", tmp_path, "postgresql://unused", "t") as url, \
            spawned(url, max_body=16) as port, \
            pytest.raises(RuntimeError, match=r"registering host .* answered 413"):
        over_http.over_http(port, 1, 1)


def test_the_module_runs_from_the_repository_root(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.http", "--claims", "10",
                           "--clients", "1", "--stores", "sqlite", "--json",
                           "--plot", str(tmp_path)],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert '"ratios"' in done.stdout
    # --plot: the same figures as an SVG picture, captioned with the command.
    picture = ElementTree.parse(tmp_path / "bench-http.svg").getroot()
    assert picture.tag == "{http://www.w3.org/2000/svg}svg"
    assert "python -m benchmarks.http --claims 10" in "".join(picture.itertext())


def test_a_figure_divides_by_the_in_process_rate() -> None:
    assert Figure("sqlite", 10, 200.0, {1: 100.0, 8: 300.0}).ratios() == {1: 0.5, 8: 1.5}


def test_loops_are_measured_in_turn(tmp_path: Path) -> None:
    figures = measure(["sqlite"], 10, [2], "postgresql://unused", tmp_path, ("on",), (1,),
                      ("auto", "asyncio"))
    assert [f.store for f in figures] == ["sqlite/group-commit-on/loop-auto",
                                          "sqlite/group-commit-on/loop-asyncio"]
