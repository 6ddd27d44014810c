"""Single claims with this checkout's code beside another checkout's, in one run.

    python -m benchmarks.before_after --other DIR [--stores sqlite,postgresql]
                                      [--threads 1,32] [--rounds 6] [--seconds 3]
                                      [--group-commit] [--postgres-url URL]
                                      [--json] [--plot DIR]

For a change that must not slow the write path (a restructuring, say): check the old code
out beside this one (``git worktree add /tmp/before <commit>``) and name it with
``--other``. Each round runs one child process per checkout, in alternating order, each on a
fresh store of its own: it registers a roomy host and claims new consumers on it through
the public service API (``open_ledger``, ``register_provider``, ``claim``: the calls both
versions share) for ``--seconds`` after a short warm-up, in each of ``--threads`` threads
at once (each on a host of its own), and reports its claims per second.
Each child imports its own checkout's ``src`` (``PYTHONPATH``). The figure is the median of
the rounds per checkout, and the ratio this/other per store: on a noisy machine only the
ratio of the same run means anything. Beside the claims per second of wall time, each child
reports its claims per second of its own CPU time (the client's share of a claim: the
Python code a change can slow down), which a loaded machine disturbs much less.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.report import TITLES
from benchmarks.scratch import POOL, postgres_schema
from benchmarks.settings import default_postgres_url

THIS = Path(__file__).resolve().parents[1]

#: The child: only public API calls that every version of the ledger has.
CHILD = """
import json, sys, threading, time, uuid
from allocation_ledger import open_ledger
url, seconds, threads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
grouped = {"group_commit": True} if sys.argv[4:] == ["grouped"] else {}
flavour = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
local, tallies = threading.local(), []

def timed(owner, name, label):
    function = getattr(owner, name)
    def call(*args, **kwargs):
        if not hasattr(local, "nested"):
            local.nested, local.spent = [], {}
            tallies.append(local.spent)
        start = time.thread_time()
        local.nested.append(0.0)
        try:
            return function(*args, **kwargs)
        finally:
            elapsed = time.thread_time() - start
            inner = local.nested.pop()
            local.spent[label] = local.spent.get(label, 0.0) + elapsed - inner
            if local.nested:
                local.nested[-1] += elapsed
    setattr(owner, name, call)

with open_ledger(url, **grouped) as ledger:
    hosts = [str(uuid.uuid4()) for _ in range(threads)]
    for host in hosts:
        ledger.register_provider(host, f"bench-{host}", inventories={
            rc: {"total": 2_000_000_000} for rc in flavour})
    def claim(host):
        ledger.claim(str(uuid.uuid4()), {host: dict(flavour)}, None,
                     project_id="p", user_id="u", request={"actor": "bench"})
    for _ in range(200):
        claim(hosts[0])
    store = ledger.store
    snapshots = getattr(getattr(store, "snapshots", None), "recorder", None)
    for owner, name, label in ((store.recorder, "select_events", "database calls"),
                               (store.recorder, "insert_events", "database calls"),
                               (snapshots, "select_events", "database calls"),
                               (store.mapper, "to_domain_event", "decode events"),
                               (store.mapper, "to_stored_event", "encode events")):
        if owner is not None and hasattr(owner, name):
            timed(owner, name, label)
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    def worker(n):
        start.wait()
        while time.perf_counter() - began < seconds:
            claim(hosts[n])
            counts[n] += 1
    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    began, cpu = time.perf_counter(), time.process_time()
    start.wait()
    for w in workers:
        w.join()
    done = sum(counts)
    cpu = time.process_time() - cpu
    parts = {}
    for spent in tallies:
        for label, value in spent.items():
            parts[label] = parts.get(label, 0.0) + value
    parts = {label: value / done * 1e6 for label, value in parts.items()}
    parts["the rest: validation, decision, events, unit of work"] = (
        cpu / done * 1e6 - sum(parts.values()))
    print(done / (time.perf_counter() - began), done / cpu, json.dumps(parts))
"""


def main() -> int:
    """Run the rounds and print the medians and ratios (JSON with ``--json``)."""
    args = _parser().parse_args()
    other = Path(args.other).resolve()
    if not (other / "src" / "allocation_ledger").is_dir():
        print(f"before_after: {other} is not a checkout of the ledger (no src/allocation_ledger)",
              file=sys.stderr)
        return 2
    trees = {"this": THIS, "other": other}
    rows = [_row(store, int(threads), trees, args) for store in args.stores.split(",")
            for threads in args.threads.split(",")]
    if args.plot is not None:
        print(f"drew {_draw(rows, Path(args.plot), other.name)}")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'store':<12}{'threads':>8}  {'measure':<26}{'this':>9}{'other':>9}"
          f"{'this/other':>12}")
    for row in rows:
        for measure, label in (("wall", "claims/s (wall)"), ("cpu", "claims per CPU-second")):
            got = row[measure]
            assert isinstance(got, dict)
            print(f"{row['store']:<12}{row['threads']:>8}  {label:<26}{got['this']:>9}"
                  f"{got['other']:>9}{got['ratio']:>12}")
    return 0


def _row(store: str, threads: int, trees: dict[str, Path],
         args: argparse.Namespace) -> dict[str, Any]:
    """Both checkouts' medians and their ratio on one store with ``threads`` threads (each
    claiming on a host of its own), rounds alternating which checkout goes first."""
    rates: dict[str, list[Rates]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            rates[name].append(_child(trees[name], store, threads, args))
    row: dict[str, Any] = {"store": store, "threads": threads}
    for measure, got in (("wall", {name: [r[0] for r in rounds] for name, rounds in rates.items()}),
                         ("cpu", {name: [r[1] for r in rounds] for name, rounds in rates.items()})):
        this, before = statistics.median(got["this"]), statistics.median(got["other"])
        row[measure] = {"this": round(this, 1), "other": round(before, 1),
                        "ratio": round(this / before, 3)}
    row["cpu_us_by_part"] = {
        name: {label: round(statistics.median(r[2].get(label, 0.0) for r in rates[name]), 1)
               for label in sorted({label for r in rates[name] for label in r[2]})}
        for name in trees}
    row["rounds"] = {name: [r[:2] for r in rounds] for name, rounds in rates.items()}
    return row


def _child(tree: Path, store: str, threads: int, args: argparse.Namespace) -> Rates:
    """One child's claims per second of wall time and of its CPU time, and its CPU
    microseconds per claim by part, on a fresh store of kind ``store``."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    with tempfile.TemporaryDirectory(prefix="before-after-") as workdir:
        if store == "sqlite":
            return _run(env, f"sqlite:///{Path(workdir) / 'ledger.db'}", args, threads)
        with postgres_schema(args.postgres_url, prefix="ba") as schema:
            return _run(env, f"{args.postgres_url}?schema={schema}&{POOL}", args, threads)


Rates = tuple[float, float, dict[str, float]]


def _run(env: dict[str, str], url: str, args: argparse.Namespace, threads: int) -> Rates:
    grouped = ["grouped"] if args.group_commit else []
    done = subprocess.run([sys.executable, "-c", CHILD, url, str(args.seconds), str(threads),
                           *grouped],
                          env=env,
                          capture_output=True, text=True, check=False, timeout=args.seconds + 300)
    if done.returncode != 0:
        raise SystemExit(f"before_after: a child failed: {done.stderr.strip()[-2000:]}")
    wall, cpu, parts = done.stdout.strip().splitlines()[-1].split(maxsplit=2)
    return float(wall), float(cpu), json.loads(parts)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.before_after",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", required=True, help="the other checkout (its root folder)")
    parser.add_argument("--stores", default="sqlite,postgresql",
                        help="sqlite, postgresql or both (default)")
    parser.add_argument("--threads", default="1,32",
                        help="threads claiming at once, each on a host of its own (1,32)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per store (default 6)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="seconds of claims per child (default 3)")
    parser.add_argument("--postgres-url", default=default_postgres_url(),
                        help="PostgreSQL database for scratch schemas")
    parser.add_argument("--group-commit", action="store_true",
                        help="open both ledgers with group commit on (the threads' claims "
                             "share appends)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--plot", metavar="DIR",
                        help="draw the client CPU per claim by part, other beside this, as "
                             "DIR/before-after-cpu.svg")
    return parser


def _draw(rows: list[dict[str, Any]], folder: Path, other: str) -> Path:
    """Stacked bars: the client's CPU microseconds per claim by part, for each store and
    thread count, the other checkout beside this one; the caption is the command."""
    categories: list[str] = []
    parts: dict[str, list[float]] = {}
    for row in rows:
        before = "before" if other == "before" else f"before ({other})"
        for name, label in (("other", before), ("this", "after")):
            categories.append(f"{TITLES.get(row['store'], row['store'])}, "
                              f"{row['threads']} thr., {label}")
            for part, us in row["cpu_us_by_part"][name].items():
                parts.setdefault(part, [0.0] * len(rows) * 2)[len(categories) - 1] = us
    folder.mkdir(parents=True, exist_ok=True)
    return plots.stacked(folder / "before-after-cpu.svg",
                         title="Client CPU per claim by part, before and after",
                         ylabel="CPU microseconds per claim", categories=categories,
                         parts=parts, caption="python -m benchmarks.before_after "
                         + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
