"""The benchmark works: its smallest run on the in-memory store and SQLite writes results of
the documented shape, the history it grows is a valid ledger, and ``python -m benchmarks``
runs from the repository root. Speed is not asserted: the figures of a shared test machine
mean nothing, the shape and the bookkeeping do."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from allocation_ledger import open_ledger
from benchmarks.__main__ import main
from benchmarks.growth import grow, ledger_size
from benchmarks.workload import FLAVOUR, a_host
from tests.invariants import assert_invariants

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_FIELDS = {"count", "items_per_op", "seconds", "rate", "p50_ms", "p95_ms", "p99_ms"}
FIGURE_FIELDS = SAMPLE_FIELDS | {"floor", "vs_floor", "p50_vs_floor"}


def assert_figure(found: dict[str, Any]) -> None:
    """A timed figure beside its floor: positive counts and rates, ordered percentiles."""
    assert set(found) >= FIGURE_FIELDS
    assert set(found["floor"]) >= SAMPLE_FIELDS
    assert found["count"] >= 1 and found["rate"] > 0 and found["floor"]["rate"] > 0
    per_second = found.get("commands_per_second", found["rate"])
    assert found["vs_floor"] == pytest.approx(per_second / found["floor"]["rate"], rel=0.01)
    assert 0 < found["p50_ms"] <= found["p95_ms"] <= found["p99_ms"]


def test_smallest_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    code = main(["--quick", "--stores", "memory,sqlite", "--duration", "0.2",
                 "--writers", "1,2", "--batch-sizes", "1,10", "--small-history", "200",
                 "--grow-to", "1200", "--history-claims", "50", "--workdir", str(tmp_path),
                 "--out", str(out), "--ratios", "skip", "--plot", str(tmp_path / "img")])

    assert code == 0
    results = json.loads(out.read_text())
    assert set(results) == {"meta", "stores", "targets", "ratios"}
    assert results["ratios"] == {}
    assert results["meta"]["settings"]["grow_to"] == 1200
    assert set(results["stores"]) == {"memory", "sqlite"}
    for kind, result in results["stores"].items():
        assert set(result) == {"single", "command_ids", "chain", "threads", "writers", "moves",
                               "batches", "history", "breakdown"}
        assert_figure(result["single"])
        assert_figure(result["threads"])
        assert result["threads"]["threads"] == 32
        ids = result["command_ids"]
        assert ids["ids_vs_without"] == pytest.approx(
            ids["with_ids"]["rate"] / ids["without_ids"]["rate"], rel=0.01)
        assert min(ids[k]["count"] for k in ("with_ids", "without_ids", "plain",
                                             "unrecorded")) > 0
        if kind == "memory":
            assert result["chain"] is None  # the in-memory store keeps no chain
        else:
            assert_figure(result["chain"])  # chained claims beside the unchained twin
        assert set(result["writers"]) == {"1", "2"}
        for by_writers in result["writers"].values():
            assert_figure(by_writers["claims"])
            assert_figure(by_writers["shared"])
        assert set(result["moves"]) == {"confirm", "revert"}
        for move in result["moves"].values():
            assert_figure(move)
            assert move["commands_per_second"] == pytest.approx(3 * move["rate"], rel=0.01)
        assert set(result["batches"]) == {"1", "10"}
        assert result["batches"]["10"]["items_per_op"] == 10
        for batch in result["batches"].values():
            assert_figure(batch)
            assert batch["copy"]["rate"] > 0
            assert batch["vs_copy"] == pytest.approx(batch["rate"] / batch["copy"]["rate"],
                                                     rel=0.01)
        history = result["history"]
        assert history["events"]["grown"] >= 1200 > history["events"]["before"] >= 200
        for side in ("before", "after", "twin"):
            assert history[side]["count"] >= 50
        parts = result["breakdown"]
        assert sum(parts["parts_us"].values()) == pytest.approx(parts["us_per_claim"], rel=0.01)
        # A claim is one atomic append, whatever the store.
        assert parts["calls_per_claim"]["database: append (one transaction)"] == 1.0
    cold = results["stores"]["sqlite"]["history"]["cold"]["large"]
    assert 1 <= cold["rows_read"] <= 210 < cold["host_stream_length"]
    names = {(t["store"], t["name"]) for t in results["targets"]}
    assert ("sqlite", "rows a fresh store reads for its first claim") in names
    assert ("sqlite", "single claims with the chain vs without") in names
    assert all(isinstance(t["met"], bool) for t in results["targets"])
    # --plot: the figures just measured, drawn as SVG pictures with the command as caption.
    for name in ("bench-claims", "bench-writers", "bench-breakdown"):
        picture = ElementTree.parse(tmp_path / "img" / f"{name}.svg").getroot()
        assert picture.tag == "{http://www.w3.org/2000/svg}svg"
        text = "".join(picture.itertext())
        assert "python -m benchmarks --quick" in text and "SQLite" in text


@pytest.mark.slow  # about 90 s: every T1-T6 measured once, small (CI runs it)
def test_cpu_ratios_alone_print_every_target(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    code = main(["--quick", "--ratios", "only", "--stores", "memory,sqlite", "--duration",
                 "0.2", "--writers", "1,2", "--replay-events", "300,600", "--scale-hosts", "20",
                 "--workdir", str(tmp_path), "--out", str(out), "--plot", str(tmp_path)])

    assert code == 0
    results = json.loads(out.read_text())
    assert results["stores"] == {} and results["targets"] == []
    assert results["ratios"]["memory"] is None  # no database, nothing raw to compare with
    found = results["ratios"]["sqlite"]
    keys = [t["key"] for t in found["targets"]]
    assert keys == ["T1", "T2", "T3", "T3", "T3", "T4", "T4", "T4", "T5", "T6"]
    for t in found["targets"]:
        assert t["store"] == "sqlite" and t["value"] > 0
        assert t["met"] == (t["value"] <= float(t["goal"][3:]) if t["goal"].startswith("<=")
                            else t["value"] >= float(t["goal"][3:]))
    batching = found["batching"]
    grouped, raw = batching["grouped"], batching["raw_rows"]
    # SQLite runs in the client: no backend CPU; every side did work and took CPU.
    for side in (grouped, raw, batching["single"], found["serve"]["in_process"]):
        assert side["count"] > 0 and side["cpu_per_item"]["client_us"] > 0
        assert side["cpu_per_item"]["backend_us"] == 0
    # T6's CPU is counted from when the clients have their hosts: the claims' alone
    serve = found["serve"]
    assert serve["over_http"]["count"] > 0
    assert serve["over_http"]["cpu_per_item"]["client_us"] > 0
    assert serve["server_cpu_per_claim"]["client_us"] > 0
    assert batching["rows_per_claim"] >= 2  # the consumer's event and the host's at least
    assert found["targets"][0]["value"] == pytest.approx(
        grouped["cpu_per_item"]["total_us"]
        / (batching["rows_per_claim"] * raw["cpu_per_item"]["total_us"]), rel=0.02)
    assert found["scaling"]["writers"] == 2
    # --quick: T3 in one round, its medians that round's ratios
    assert found["scaling"]["t3_cpu"] == found["scaling"]["round_cpu_ratios"][0]
    assert found["scaling"]["t3_rate"] == found["scaling"]["round_rate_ratios"][0]
    assert found["replay"]["sizes"] == [300, 600]
    assert found["scale"]["hosts"] == 20
    # T5 is the median of its rounds' ratios (16 rounds, each a turn of each side)
    assert len(found["scale"]["round_ratios"]) == 16
    assert found["scale"]["t5"] == pytest.approx(
        statistics.median(found["scale"]["round_ratios"]), abs=0.001)
    printed = capsys.readouterr().out
    assert "CPU ratios (T1-T6)" in printed
    for key in ("T1", "T2", "T3", "T4", "T5", "T6"):
        assert f"  {key}   sqlite" in printed
    assert (tmp_path / "cpu-per-claim.svg").read_text().startswith("<?xml")


@pytest.mark.parametrize("options", [
    ["--duration", "nan"],
    ["--writers", "0"],
    ["--stores", "oracle"],
    ["--grow-to", "100", "--small-history", "200"],
    ["--replay-events", "100000"],
    ["--ratios", "some"],
])
def test_bad_options_are_usage_errors(options: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(options)
    assert exit_.value.code == 2


def test_it_runs_as_a_module_from_the_repository_root() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "python -m benchmarks --quick" in done.stdout


def test_growth_is_valid_history() -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger)
        before = ledger_size(ledger)
        registered = ledger.provider(host).generation

        size = grow(ledger, host, 2_000)

        assert size == ledger_size(ledger) >= 2_000
        view = ledger.provider(host)
        # Half the growth is the host's own.
        assert view.generation == registered + (size - before) // 2
        assert view.usages == dict.fromkeys(FLAVOUR, 0)
        assert_invariants(ledger)


def test_bench_hosts_are_named_by_their_whole_uuid() -> None:
    # Eight hex digits of the UUID collided among T5's 100,000 hosts more often than not
    # (ProviderNameTaken halfway through registering them): two UUIDs that share them are
    # still two names.
    with open_ledger("memory://") as ledger:
        first = a_host(ledger, host="0badcafe-0000-4000-8000-000000000001")
        second = a_host(ledger, host="0badcafe-0000-4000-8000-000000000002")

        assert ledger.provider(first).name == f"bench-host-{first}"
        assert ledger.provider(second).name == f"bench-host-{second}"


def test_before_after_measures_both_checkouts_and_draws_their_cpu_by_part(
        tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.before_after", "--other", str(ROOT), "--stores",
         "sqlite", "--threads", "1", "--rounds", "2", "--seconds", "0.3", "--json",
         "--plot", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout[done.stdout.index("["):])
    assert (row["store"], row["threads"]) == ("sqlite", 1)
    for measure in ("wall", "cpu"):
        figure = row[measure]
        assert figure["this"] > 0 and figure["other"] > 0
        assert figure["ratio"] == pytest.approx(figure["this"] / figure["other"], rel=0.01)
    for name in ("this", "other"):
        parts = row["cpu_us_by_part"][name]
        assert {"database calls", "encode events"} <= set(parts)
        # the parts add up to the CPU of a claim (claims per CPU-second, inverted)
        assert sum(parts.values()) == pytest.approx(1e6 / statistics.median(
            r[1] for r in row["rounds"][name]), rel=0.35)
    picture = ElementTree.parse(tmp_path / "before-after-cpu.svg").getroot()
    text = "".join(picture.itertext())
    assert "python -m benchmarks.before_after --other" in text and "before" in text


def test_t3_ratios_of_one_round_are_cpu_and_rate_growth_over_raw() -> None:
    from benchmarks.stats import Sample
    from benchmarks.targets import _scaling_ratios

    def sample(count: int, seconds: float, cpu: float) -> Sample:
        return Sample(count, seconds, (), client_cpu=cpu * 0.75, backend_cpu=cpu * 0.25)

    found = {"floor_1": sample(1000, 1.0, 0.05), "floor_8": sample(2000, 1.0, 0.2),
             "shared_1": sample(100, 1.0, 0.03), "shared_8": sample(160, 1.0, 0.12)}
    cpu, rate = _scaling_ratios(found, 8)
    # claims' CPU each grew 0.00075/0.0003 = 2.5x, raw's 0.0001/0.00005 = 2x: 1.25
    assert cpu == pytest.approx(1.25)
    # claims/s grew 1.6x, raw's 2x: 0.8
    assert rate == pytest.approx(0.8)


def test_turns_bench_measures_both_sides(tmp_path: Path) -> None:
    """``python -m benchmarks.turns``: writers on shared hosts with turns and without, each
    side's figures from runs that really claimed (and the turns side takes turns)."""
    from benchmarks.scratch import scratch_store
    from benchmarks.turns import SIDES, measure, report

    with scratch_store("sqlite", tmp_path, "postgresql://unused", "turns") as url:
        found = measure(url, writers=2, hosts=8, rounds=2, seconds=0.5)
    assert set(found) == set(SIDES) == {"turns", "no turns"}
    for side, runs in found.items():
        assert len(runs) == 2, (side, runs)
        for run in runs:
            assert isinstance(run, dict), (side, run)
            assert run["rate"] > 0 and run["appends"] >= 1.0 and run["cpu_us"] > 0
    printed = report("sqlite", found)
    assert "  turns " in printed and "  no turns " in printed


def test_door_bench_measures_every_layer(tmp_path: Path) -> None:
    """``python -m benchmarks.door``: every side answered its requests (a failed request
    stops the run), each figure from the server's own CPU, and the serve sides claimed."""
    pytest.importorskip("uvicorn")
    from benchmarks.door import measure, report

    sides = measure(requests=64, clients=4, rounds=2, workdir=tmp_path)
    assert [s.label for s in sides] == [
        "uvicorn, bare ASGI app", "Starlette, one route",
        "Starlette, one route + worker thread", "serve: GET / (no store read)",
        "serve: claim", "serve --no-access-log: claim", "4 threads, Ledger.claim",
        "4 threads, the PUT /allocations handler"]
    for side in sides[:6]:
        assert side.requests == 2 * 64, side
    for side in sides:  # the CPU is read in clock ticks: a few fast requests may read 0
        assert side.requests > 0 and side.seconds > 0 and side.cpu >= 0, side
    for claimed in sides[4:6]:
        assert claimed.cpu > 0, claimed  # 128 claims take several ticks
        assert len(claimed.hosts) == 4
        with open_ledger(f"sqlite:///{tmp_path / f'door-{sides.index(claimed)}.db'}") as ledger:
            used = sum(ledger.usages_in_tree(h)[h].get("VCPU", 0) for h in claimed.hosts)
        assert used == 2 * 64 + 4 * 4  # the counted claims, and the warm-up's (64 // 4 // 4)
    assert all(side.cpu > 0 for side in sides[6:])  # seconds of claims in this process
    assert "serve: claim" in report(sides, 4)
