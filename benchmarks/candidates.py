"""``GET /allocation_candidates`` on the ledger's ``serve`` beside Placement 16's, on the same
cloud and the same database kind (PostgreSQL), in one run.

    python -m benchmarks.candidates [--nodes 1000,10000] [--requests 40] [--smoke]
                                    [--plot DIR] [--pg-url URL]
                                    [--placement-db placement_bench]

Grows one cloud (``candidates_cloud``: compute nodes of a root with ``DISK_GB`` and two NUMA
children with ``VCPU`` / ``MEMORY_MB``, traits, aggregates, partial usage) to each size of
``--nodes`` in turn in Placement 16 (``.venv-placement``, or ``LEDGER_PLACEMENT_PYTHON``), on
its own database ``--placement-db`` of ``--pg-url``'s PostgreSQL server, made by Placement's
migrations (dropped first if it exists, and afterwards) and filled by rows. At each size
that Placement database is imported into a new ledger (a fresh schema of ``--pg-url``'s
database) by ``allocation-ledger import-placement``, as an operator starts one, so both
servers hold literally the same cloud; the ledger is served by ``allocation-ledger serve``.
At each size every query is first asked of both once (untimed; the two answers must agree:
the same number of candidates, and the same candidates when the limit does not cut), then
``--requests`` times of each server in turn, one request at a time on a new connection.
Prints p50/p99 per size, query and server, Placement's latency over the ledger's, and the
ledger's growth from the smallest size to the largest, measured at the end with every
size's ledger still up and the sizes timed alternately (so a change of the host's load
during the run does not pass for growth); with ``--plot DIR`` draws them
(``benchmarks/plots.py``). Exits 1 when the answers disagree.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from allocation_ledger.http.server import free_port, spawned
from benchmarks import plots
from benchmarks.candidates_cloud import fill_placement
from benchmarks.scratch import POOL, conninfo, postgres_schema
from benchmarks.settings import default_postgres_url

ROOT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).with_name("placement_server.py")
VERSION = "1.36"
LIMIT = 1000  # what Nova's scheduler sends ([scheduler] max_placement_results)
QUERIES = {
    "flavor": f"resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20&limit={LIMIT}",
    "granular": ("resources=DISK_GB:20&required=HW_CPU_X86_AVX2"
                 "&resources1=VCPU:2,MEMORY_MB:4096&required1=HW_CPU_X86_AVX512F"
                 f"&group_policy=none&limit={LIMIT}"),
}
SIDES = ("ledger", "placement")
LABELS = {"ledger": "ledger serve", "placement": "Placement 16"}
GROWTH = "growth"  # the ledger's timings with every size's server timed alternately


class Disagreement(Exception):
    """Raised when the ledger and Placement answer one query differently."""


@dataclass(frozen=True)
class Timing:
    """One query's latencies on one server at one cloud size, in seconds."""

    nodes: int
    query: str
    side: str
    first: float
    latencies: tuple[float, ...]
    candidates: int

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile ``p`` (0-100)."""
        ordered = sorted(self.latencies)
        return ordered[max(math.ceil(p / 100 * len(ordered)), 1) - 1]


def main(argv: Sequence[str] | None = None) -> int:
    """Fill, time, print; 1 when the two servers disagree."""
    args = _parser().parse_args(argv)
    sizes = (20, 60) if args.smoke else tuple(sorted(set(args.nodes)))
    requests = 5 if args.smoke else args.requests
    try:
        timings = run(sizes, requests, args.pg_url, args.placement_db)
    except Disagreement as err:
        print(f"the answers disagree: {err}")
        return 1
    report(timings)
    if args.plot is not None:
        shown = ",".join(str(n) for n in sizes)
        command = (f"python -m benchmarks.candidates --smoke --plot {args.plot}" if args.smoke
                   else f"python -m benchmarks.candidates --nodes {shown} --requests "
                        f"{requests} --plot {args.plot}")
        print(f"drew {plot(timings, args.plot, command)}")
    return 0


def plot(timings: list[Timing], folder: Path, command: str) -> Path:
    """p50 and p99 per cloud size, query and server as grouped bars (log scale: the two
    servers differ by an order of magnitude) in ``folder/candidates-latency.svg``."""
    by = {(t.nodes, t.query, t.side): t for t in timings}
    cells = [(size, query) for size in sorted({t.nodes for t in timings}) for query in QUERIES]
    series = {f"{LABELS[side]} p{p}": [by[size, query, side].percentile(p) * 1000
                                        for size, query in cells]
              for side in SIDES for p in (50, 99)}
    return plots.bars(
        folder / "candidates-latency.svg",
        title=f"GET /allocation_candidates at {VERSION}, limit={LIMIT}, PostgreSQL",
        ylabel="latency, ms (log scale)",
        categories=[f"{query}\n{size:,} nodes" for size, query in cells],
        series=series, caption=command, log=True)


def run(sizes: Sequence[int], requests: int, pg_url: str,
        placement_db: str) -> list[Timing]:
    """Grow Placement's cloud to each size in turn, import it into a new ledger, and time
    every query on both."""
    timings: list[Timing] = []
    with _placement(pg_url, placement_db) as (placement_port, placement_conninfo), \
            contextlib.ExitStack() as ledgers:
        have = 0
        ledger_ports: dict[int, int] = {}  # each size's ledger, kept up to the end
        for size in sizes:
            began = time.perf_counter()
            fill_placement(placement_conninfo, have, size)
            have = size
            schema = ledgers.enter_context(postgres_schema(pg_url, "bench_candidates"))
            url = f"{conninfo(pg_url)}?schema={schema}&{POOL}"
            filled = time.perf_counter()
            import_placement(url, placement_conninfo)
            imported = time.perf_counter()
            ledger_ports[size] = ledgers.enter_context(spawned(url, timeout=600))
            print(f"{size:,} nodes: Placement filled in {filled - began:.0f} s (SQL), "
                  f"imported into the ledger in {imported - filled:.0f} s "
                  f"(import-placement), ledger's serve up in "
                  f"{time.perf_counter() - imported:.0f} s", flush=True)
            ports = {"ledger": ledger_ports[size], "placement": placement_port}
            for name, query in QUERIES.items():
                timings += _time_query(ports, size, name, query, requests)
        if len(sizes) > 1:
            timings += _time_growth(ledger_ports, requests)
    return timings


def _time_growth(ports: dict[int, int], requests: int) -> list[Timing]:
    """Every size's ledger again, the sizes timed alternately (side ``growth``), so the
    ledger's growth is measured under one load, not across a run whose load changes."""
    found: list[Timing] = []
    print("the ledger at every size, alternately:", flush=True)
    for name, query in QUERIES.items():
        latencies: dict[int, list[float]] = {size: [] for size in ports}
        for _ in range(requests):
            for size, port in ports.items():
                began = time.perf_counter()
                _ask(port, query)
                latencies[size].append(time.perf_counter() - began)
        for size in ports:
            t = Timing(size, name, GROWTH, 0.0, tuple(latencies[size]), 0)
            print(f"  {size:>7,} {name:9} ledger    p50 {t.percentile(50) * 1000:9.1f} ms  "
                  f"p99 {t.percentile(99) * 1000:9.1f} ms", flush=True)
            found.append(t)
    return found


def import_placement(url: str, placement: str) -> None:
    """``allocation-ledger --url URL import-placement --from PLACEMENT``, as an operator
    runs it; :class:`RuntimeError` with its output when it fails."""
    done = subprocess.run(
        [sys.executable, "-c", "from allocation_ledger.cli import main; "
         "raise SystemExit(main())", "--url", url, "--no-progress", "import-placement",
         "--from", placement], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"import-placement exited {done.returncode}: "
                           f"{(done.stdout + done.stderr)[-2000:]}")


def _time_query(ports: dict[str, int], size: int, name: str, query: str,
                requests: int) -> list[Timing]:
    first: dict[str, float] = {}
    answers: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        began = time.perf_counter()
        answers[side] = _ask(ports[side], query)
        first[side] = time.perf_counter() - began
    counts = _agree(answers, f"{name} at {size:,} nodes")
    latencies: dict[str, list[float]] = {side: [] for side in SIDES}
    for _ in range(requests):
        for side in SIDES:
            began = time.perf_counter()
            _ask(ports[side], query)
            latencies[side].append(time.perf_counter() - began)
    found = [Timing(size, name, side, first[side], tuple(latencies[side]), counts)
             for side in SIDES]
    for t in found:
        print(f"  {name:9} {t.side:9} p50 {t.percentile(50) * 1000:9.1f} ms  "
              f"p99 {t.percentile(99) * 1000:9.1f} ms  ({counts} candidates)", flush=True)
    return found


def _ask(port: int, query: str) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", f"/allocation_candidates?{query}", headers={
            "OpenStack-API-Version": f"placement {VERSION}", "X-Auth-Token": "admin",
            "Accept": "application/json"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise Disagreement(f"port {port} answered {response.status}: {body[:300]!r}")
    found: dict[str, Any] = json.loads(body)
    return found


def _agree(answers: dict[str, dict[str, Any]], what: str) -> int:
    """The number of candidates both answered; :class:`Disagreement` when they differ."""
    found = {side: [_canonical(a) for a in answer["allocation_requests"]]
             for side, answer in answers.items()}
    ours, theirs = found["ledger"], found["placement"]
    if len(ours) != len(theirs):
        raise Disagreement(f"{what}: {len(ours)} candidates from the ledger, "
                           f"{len(theirs)} from Placement")
    if len(ours) < LIMIT and sorted(ours) != sorted(theirs):
        raise Disagreement(f"{what}: different candidates")
    return len(ours)


def _canonical(areq: dict[str, Any]) -> str:
    """A candidate as text, its mappings' provider lists sorted (their order is not part of
    the answer)."""
    mappings = {k: sorted(v) for k, v in areq.get("mappings", {}).items()}
    return json.dumps({**areq, "mappings": mappings}, sort_keys=True)


@contextlib.contextmanager
def _placement(pg_url: str, database: str) -> Iterator[tuple[int, str]]:
    """Placement 16 on a fresh ``database`` of ``pg_url``'s server; yields its port and the
    database's psycopg connection string."""
    base = conninfo(pg_url)
    server = base.rsplit("/", 1)[0]
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{database}"')
    port = free_port()
    connection = server.replace("postgresql://", "postgresql+psycopg://") + f"/{database}"
    with tempfile.TemporaryDirectory(prefix="bench-candidates-") as tmp, \
            open(Path(tmp) / "placement.log", "w+b") as log:
        env = {**os.environ, "PYTHONPATH": _psycopg_path(Path(tmp))}
        proc = subprocess.Popen([placement_python(), "-P", str(SERVER), str(port), connection],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            _wait_for(proc, port, log)
            yield port, f"{server}/{database}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def placement_python() -> str:
    """Placement's venv's Python (``LEDGER_PLACEMENT_PYTHON`` or ``.venv-placement``)."""
    return os.environ.get("LEDGER_PLACEMENT_PYTHON") or str(
        ROOT / ".venv-placement" / "bin" / "python")


def _psycopg_path(folder: Path) -> str:
    """A folder holding only psycopg 3 (this venv's), for Placement's SQLAlchemy."""
    site = Path(psycopg.__file__).resolve().parents[1]
    for entry in site.glob("psycopg*"):
        (folder / entry.name).symlink_to(entry)
    return str(folder)


def _wait_for(proc: subprocess.Popen[bytes], port: int, log: Any) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"Placement exited: {log.read()[-2000:].decode()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.2)
    raise RuntimeError("Placement did not start within 180 s")


def report(timings: list[Timing]) -> None:
    """The table, the ratios and the targets."""
    print(f"\nGET /allocation_candidates at {VERSION}, PostgreSQL for both, p50 / p99 in ms:")
    print(f"{'nodes':>7} {'query':9} {'ledger':>17} {'Placement 16':>19} "
          f"{'Placement/ledger p50':>21} {'p99':>6}")
    by = {(t.nodes, t.query, t.side): t for t in timings}
    sizes = sorted({t.nodes for t in timings})
    for size in sizes:
        for query in QUERIES:
            ours, theirs = by[size, query, "ledger"], by[size, query, "placement"]
            print(f"{size:>7,} {query:9} "
                  f"{ours.percentile(50) * 1000:8.1f} / {ours.percentile(99) * 1000:6.1f} "
                  f"{theirs.percentile(50) * 1000:9.1f} / {theirs.percentile(99) * 1000:7.1f} "
                  f"{theirs.percentile(50) / ours.percentile(50):20.1f}x "
                  f"{theirs.percentile(99) / ours.percentile(99):5.1f}x")
    small, large = sizes[0], sizes[-1]
    for query in QUERIES:
        ours = by[large, query, "ledger"]
        faster = by[large, query, "placement"].percentile(50) / ours.percentile(50)
        alike = GROWTH if (large, query, GROWTH) in by else "ledger"
        how = " (timed alternately)" if alike == GROWTH else ""
        growth = by[large, query, alike].percentile(50) / by[small, query, alike].percentile(50)
        print(f"target {query}: ledger {faster:.1f}x faster than Placement at {large:,} nodes "
              f"(>= 10x: {'met' if faster >= 10 else 'missed'}); ledger p50 {growth:.2f}x "
              f"from {small:,} to {large:,} nodes{how} "
              f"(<= 2x: {'met' if growth <= 2 else 'missed'})")


def _numbers(text: str) -> list[int]:
    try:
        found = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1000,10000, got {text!r}"
                                         ) from None
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.candidates",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=_numbers, default=[1000, 10000],
                        help="cloud sizes in compute nodes (default 1000,10000)")
    parser.add_argument("--requests", type=int, default=40,
                        help="timed requests per query, server and size (default 40)")
    parser.add_argument("--smoke", action="store_true",
                        help="20 and 60 nodes, 5 requests: that it runs, not what it says")
    parser.add_argument("--plot", type=Path, metavar="DIR",
                        help="also draw p50 and p99 per size, query and server into "
                             "DIR/candidates-latency.svg")
    parser.add_argument("--pg-url", default=default_postgres_url())
    parser.add_argument("--placement-db", default="placement_bench")
    return parser


if __name__ == "__main__":
    sys.exit(main())
