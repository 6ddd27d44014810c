"""Peak memory and rate of replaying the ledger, by ledger size: a raw read-and-decode of
every event, the audit, and a rebuild of every projection from zero.

    python -m benchmarks.replay_memory [--events 100000,1000000] [--stores sqlite,postgresql]
                                       [--pg-url URL] [--workdir DIR] [--json]

Each ledger is grown by claim-and-release cycles on one host (``benchmarks/growth.py``: the
history grows, the state does not), on SQLite in ``--workdir`` (kept and reused by the next
run) and in a fresh PostgreSQL schema. Each replay runs in a process of its own, which
reports its own peak resident set size (``VmHWM`` of ``/proc/self/status``: the peak of its
own memory since it started; ``getrusage``'s ``ru_maxrss`` would keep the parent's size at
the fork through the ``exec``), wall time and CPU
(its own and, on PostgreSQL, its backend's: ``benchmarks/cpu.py``); the audit's rate is
also given as a ratio of the raw read-and-decode rate of the same store.
Replay in constant memory means the peak at the largest ledger is close to the smallest's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from allocation_ledger import open_ledger
from benchmarks.growth import grow, ledger_size
from benchmarks.settings import default_postgres_url
from benchmarks.workload import a_host

# the repository root: the child runs ``python -m benchmarks.replay_memory`` from there
ROOT = Path(__file__).resolve().parents[1]
KINDS = ("read", "audit", "rebuild")


def main() -> int:
    """Grow the ledgers, replay each in a child process, report."""
    args = _parser().parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.url)))
        return 0
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for events in (int(x) for x in args.events.split(",")):
        for store in args.stores.split(","):
            if store == "sqlite":
                url = f"sqlite:///{workdir / f'replay-{events}.db'}"
                grown(url, events)
                rows += measure(store, url)
            else:
                with Schema(args.pg_url) as url:
                    grown(url, events)
                    rows += measure(store, url)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print(rows)
    return 0


def grown(url: str, events: int) -> None:
    """The ledger at ``url`` with at least ``events`` events."""
    with open_ledger(url) as ledger:
        if ledger_size(ledger) >= events:
            return
        started = time.perf_counter()
        grow(ledger, a_host(ledger), events)
        print(f"grew {url.split('?', maxsplit=1)[0]} to {ledger_size(ledger):,} events in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


def measure(store: str, url: str) -> list[dict[str, Any]]:
    """Each kind of replay in a fresh process."""
    found = []
    for kind in KINDS:
        child = [sys.executable, "-m", "benchmarks.replay_memory", "--child", kind, "--url", url]
        out = subprocess.run(child, cwd=ROOT, check=True, capture_output=True, text=True).stdout
        found.append({"store": store, **json.loads(out.strip().splitlines()[-1])})
    read, read_cpu = found[0]["events_per_second"], found[0]["events_per_cpu_second"]
    for row in found:
        row["vs_read"] = round(row["events_per_second"] / read, 3) if read else None
        row["cpu_vs_read"] = (round(row["events_per_cpu_second"] / read_cpu, 3) if read_cpu
                              else None)
    return found


def _child(kind: str, url: str) -> dict[str, Any]:
    """One replay in this process: events, seconds, rate and peak RSS."""
    from allocation_ledger.adapters.decoding import Decoder
    from allocation_ledger.audit import audit
    from allocation_ledger.audit.ledger_events import notifications
    from allocation_ledger.bootstrap import open_store
    from allocation_ledger.projections.readmodels import ReadModels
    from benchmarks.cpu import Meter

    store, _ = open_store(url)
    meter = Meter(url)
    cpu = meter.read()
    ended = None
    started = time.perf_counter()
    try:
        if kind == "read":
            decoder, events = Decoder(store.mapper), 0
            for events, notification in enumerate(notifications(store), 1):  # noqa: B007
                decoder(notification)
        elif kind == "audit":
            report = audit(store, stale_after=None)
            events = report.events
            if not report.ok:
                raise SystemExit(f"the audit found errors: {report.errors[:3]}")
        else:
            with ReadModels(store, _engine(store)) as models:
                events = models.rebuild().events
                ended = meter.read()  # while the read models' backend is still there
    finally:
        seconds = time.perf_counter() - started
        cpu = (ended if ended is not None else meter.read()) - cpu
        meter.close()
        store.close()
    return {"kind": kind, "events": events, "seconds": round(seconds, 2),
            "events_per_second": round(events / seconds),
            "client_cpu_s": round(cpu.client, 3), "backend_cpu_s": round(cpu.backend, 3),
            "events_per_cpu_second": round(events / cpu.total),
            "peak_rss_mib": round(_peak_rss_kib() / 1024, 1)}


def _peak_rss_kib() -> int:
    """This process's peak resident set size since its ``exec`` (``VmHWM``), in KiB;
    ``ru_maxrss`` where there is no ``/proc``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _engine(store: Any) -> Any:
    from allocation_ledger.projections.store import open_engine

    return open_engine(store.env, None)


class Schema:
    """A fresh PostgreSQL schema, dropped afterwards; its store URL."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.name = f"bench_replay_{uuid.uuid4().hex[:12]}"

    def __enter__(self) -> str:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        return f"{self.base}?schema={self.name}&pool_size=2&max_overflow=2"

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{self.name}" CASCADE')


def _print(rows: list[dict[str, Any]]) -> None:
    print(f"{'store':<11}{'replay':<9}{'events':>11}{'seconds':>9}{'events/s':>10}"
          f"{'vs read':>9}{'per CPU-s':>11}{'vs read':>9}{'peak RSS MiB':>14}")
    for r in rows:
        print(f"{r['store']:<11}{r['kind']:<9}{r['events']:>11,}{r['seconds']:>9.1f}"
              f"{r['events_per_second']:>10,}{r['vs_read']:>9.2f}"
              f"{r['events_per_cpu_second']:>11,}{r['cpu_vs_read']:>9.2f}"
              f"{r['peak_rss_mib']:>14.1f}")
    print("(per CPU-s: events per second of the replay's CPU and, on PostgreSQL, its "
          "backend's)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100000,1000000",
                        help="ledger sizes, comma-separated (default 100000,1000000)")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default=default_postgres_url())
    parser.add_argument("--workdir", default=None, help="keep (and reuse) the SQLite ledgers")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
