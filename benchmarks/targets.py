"""T1-T6: the performance targets as ratios of like against like, measured in one run.

CPU against CPU (client by ``time.process_time``, PostgreSQL backends by their
``/proc/<pid>/schedstat``: ``benchmarks/cpu.py``), each side timed in alternating slices
with the other so that both share the machine's load of the moment:

- **T1** client + backend CPU per grouped claim (``threads`` threads on ``shared_hosts``
  hosts, group commit) over the CPU per raw row of the same rows (as many as a group
  appended, by ``executemany`` in one transaction) times the rows a claim appends.
- **T2** CPU of a single claim (one thread, on the same hosts) over a grouped claim's.
- **T3** writer processes (the most of ``writers``, 8 by default) against one, claiming on
  ``shared_hosts`` shared hosts: CPU per claim (8)/(1) over the same ratio of raw-insert
  processes; appends asked of the store per claim at 8; claims/s (8)/(1) over the raw
  floor's (8)/(1); each the median of :data:`SCALING_ROUNDS` rounds' ratios.
- **T4** replay of a grown ledger (``benchmarks/replay_memory.py``, each in a process of its
  own): audit and rebuild events per CPU second over the raw read-and-decode's of the same
  ledger, at the larger of ``replay_events``; peak RSS at the larger over the smaller.
- **T5** claims/s on ``scale_hosts`` hosts (each claimed on once before) over on 10.
- **T6** ``allocation-ledger serve --workers N`` (group commit on; ``serve_workers``, one per
  core by default) with ``threads`` HTTP clients:
  claims/s over the in-process figure of as many threads (group commit on), same store.

Beside each, the wall-clock form of the same ratio, and the old ratio to the one-row floor
(``benchmarks/floor.py``) where there is one, as information.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.http.server import spawned
from benchmarks import replay_memory
from benchmarks.breakdown import claim_breakdown
from benchmarks.cpu import Cpu, Meter, child_with
from benchmarks.floor import floor_target, open_raw_table
from benchmarks.over_http import over_http
from benchmarks.scratch import POOL, scratch_store
from benchmarks.settings import Settings
from benchmarks.stats import Sample, combine, run_for, run_together
from benchmarks.workload import (
    FLAVOUR,
    PROJECT,
    REQUEST,
    USER,
    a_host,
    claim_new,
    claimer,
    new_id,
    shared_claimer,
)
from benchmarks.writers import FLOOR, ORDERED, SHARED, run_writers

Progress = Callable[[str], None]
#: Slices of each side of a CPU ratio (T1, T2, T5, T6), alternating.
ROUNDS = 4
#: Rounds of T5, each a turn of each side (its ratio is the median of the rounds').
SCALE_ROUNDS = 16
#: Rounds of T3, each a run of raw and claiming processes at 1 and at the most (its ratios
#: are the medians of the rounds').
SCALING_ROUNDS = 6
#: Writer processes of T3 when ``writers`` asks for no more than one.
WRITERS = 8


@dataclass(frozen=True)
class Taken:
    """``count`` items (claims, rows) done in ``seconds`` of wall time with ``cpu``."""

    count: int = 0
    seconds: float = 0.0
    cpu: Cpu = field(default_factory=Cpu)

    def __add__(self, other: Taken) -> Taken:
        return Taken(self.count + other.count, self.seconds + other.seconds,
                     self.cpu + other.cpu)

    @property
    def rate(self) -> float:
        """Items per second of wall time."""
        return self.count / self.seconds if self.seconds > 0 else 0.0

    @property
    def each(self) -> Cpu:
        """CPU per item."""
        return self.cpu.per(self.count)

    def to_dict(self) -> dict[str, Any]:
        """As JSON: count, seconds, rate, and CPU per item in microseconds."""
        return {"count": self.count, "seconds": round(self.seconds, 3),
                "rate": round(self.rate, 2), "cpu_per_item": self.each.to_dict()}


def timed(meter: Meter, work: Callable[[], int]) -> Taken:
    """``work()`` (which returns the items it did) with its wall time and CPU."""
    before = meter.read()
    start = time.perf_counter()
    count = work()
    seconds = time.perf_counter() - start
    return Taken(count, seconds, meter.read() - before)


def alternating(meter: Meter, works: Sequence[Callable[[], int]],
                rounds: int = ROUNDS) -> list[Taken]:
    """Each of ``works`` timed ``rounds`` times, in turns whose order rotates."""
    return [sum(turns, Taken()) for turns in zip(*by_round(meter, works, rounds), strict=True)]


def by_round(meter: Meter, works: Sequence[Callable[[], int]],
             rounds: int = ROUNDS) -> list[list[Taken]]:
    """Each of ``works`` timed once a round, ``rounds`` rounds, the order rotating; each
    round's turns, in the order of ``works``."""
    found = []
    for i in range(rounds):
        shift = i % len(works)
        turns: list[Taken] = [Taken()] * len(works)
        for k in [*range(shift, len(works)), *range(shift)]:
            turns[k] = timed(meter, works[k])
        found.append(turns)
    return found


def round_ratios(pairs: Sequence[Sequence[Taken]]) -> list[float]:
    """Each round's first claims/s over its second (rounds whose second did nothing left
    out)."""
    return [round(a.rate / b.rate, 3) for a, b in pairs if b.rate > 0]


def median_ratio(ratios: Sequence[float]) -> float | None:
    """The median of rounds' ratios, each round's two turns taken back to back: a stall of
    the machine in one turn moves one round's ratio, where it would move a pooled ratio by
    its whole weight."""
    return round(statistics.median(ratios), 3) if ratios else None


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


@dataclass(frozen=True)
class Target:
    """One of T1-T6 on one store: the CPU ratio measured, its goal, and beside it the
    same ratio in wall-clock time and the old ratio to the one-row floor."""

    key: str
    store: str
    name: str
    goal: str
    value: float | None
    met: bool
    wall: float | None = None
    vs_floor: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The target as JSON."""
        return {"key": self.key, "store": self.store, "name": self.name, "goal": self.goal,
                "value": self.value, "met": self.met, "wall": self.wall,
                "vs_floor": self.vs_floor}


def _at_most(limit: float) -> Callable[[float | None], bool]:
    return lambda v: v is not None and v <= limit


def _at_least(limit: float) -> Callable[[float | None], bool]:
    return lambda v: v is not None and v >= limit


@contextmanager
def counting(ledger: Ledger) -> Iterator[list[int]]:
    """Count the appends the ledger asks of its store and the rows they carry meanwhile
    (``[appends, rows]``; an instance attribute, removed afterwards)."""
    recorder = ledger.store.recorder
    insert = recorder.insert_events
    counts = [0, 0]

    def counted(stored_events: Sequence[Any], **kwargs: Any) -> Any:
        counts[0] += 1
        counts[1] += len(stored_events)
        return insert(stored_events, **kwargs)

    recorder.insert_events = counted  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        del recorder.insert_events


def grouped(ledger: Ledger, operations: Sequence[Callable[[], object]],
            duration: float) -> Sample:
    """The operations, a thread each, for ``duration`` seconds, group commit on."""
    ledger.commits, was = GroupCommit(ledger.store, ledger.policy), ledger.commits
    try:
        return run_together(list(operations), duration)
    finally:
        ledger.commits = was


def batching(url: str, settings: Settings) -> dict[str, Any]:
    """T1 and T2: grouped claims, their rows raw, single claims, one-row inserts."""
    piece = settings.duration / ROUNDS
    with open_ledger(url) as ledger, closing(open_raw_table(floor_target(url))) as table, \
            Meter(url) as meter, counting(ledger) as counts:
        hosts = [a_host(ledger, "ratios") for _ in range(settings.shared_hosts)]

        def claims_at_once() -> int:
            return grouped(ledger, [shared_claimer(ledger, hosts)
                                    for _ in range(settings.threads)], piece).count

        shape = [0, 0, 0]  # appends, rows, claims of the grouped claims
        warm = counts.copy()
        shape[2] = claims_at_once()  # warm-up, and the shape of a group
        shape[0], shape[1] = counts[0] - warm[0], counts[1] - warm[1]
        rows_per_claim = shape[1] / shape[2]
        batch = max(1, round(shape[1] / shape[0]))
        single = shared_claimer(ledger, hosts)
        single_before = counts.copy()
        at_once, raw, one, floor = alternating(meter, [
            claims_at_once,
            lambda: run_for(lambda: table.insert_many(batch), piece).count * batch,
            lambda: run_for(single, piece).count,
            lambda: run_for(table.insert, piece).count,
        ])
        single_rows = counts[1] - single_before[1]
    total_claims = at_once.count + one.count
    return {"grouped": at_once.to_dict(), "raw_rows": raw.to_dict(), "single": one.to_dict(),
            "one_row_floor": floor.to_dict(), "threads": settings.threads,
            "claims_per_append": round(shape[2] / shape[0], 2),
            "rows_per_claim": round(rows_per_claim, 3), "raw_batch_rows": batch,
            "rows_per_claim_in_run": round(single_rows / total_claims, 3),
            "t1": _ratio(at_once.each.total, rows_per_claim * raw.each.total),
            "t1_wall": _ratio(raw.rate / rows_per_claim, at_once.rate),
            "t1_vs_floor": _ratio(at_once.rate, floor.rate),
            "t2": _ratio(one.each.total, at_once.each.total),
            "t2_wall": _ratio(at_once.rate, one.rate),
            "t2_vs_floor": _ratio(one.rate, floor.rate)}


def scaling(url: str, settings: Settings, progress: Progress) -> dict[str, Any]:
    """T3: writer processes on shared hosts, 1 and the most, beside raw-insert processes, in
    :data:`SCALING_ROUNDS` rounds (one with ``quick``), each a run of the four sides in an
    order that rotates; each ratio is the median of the rounds' (a ratio of four runs, any
    of which a stall of the machine can move), the pooled one printed beside it."""
    most = max(settings.writers) if max(settings.writers) > 1 else WRITERS
    with open_ledger(url) as ledger:
        hosts = [a_host(ledger, "shared") for _ in range(settings.shared_hosts)]
    target = floor_target(url)
    rounds = 1 if settings.quick else SCALING_ROUNDS
    piece = settings.duration if settings.quick else settings.duration / 3
    roles = (FLOOR, SHARED, ORDERED) if url.startswith("postgres") else (FLOOR, SHARED)
    sides = [(role, n) for n in (1, most) for role in roles]
    each_round: list[dict[str, Sample]] = []
    for round_ in range(rounds):
        progress(f"T3: 1 and {most} writer processes, round {round_ + 1} of {rounds}")
        shift = round_ % len(sides)
        each_round.append({
            f"{role}_{n}": run_writers(role, url if role == SHARED else target, n, piece, hosts)
            for role, n in [*sides[shift:], *sides[:shift]]})
    found = {name: combine([r[name] for r in each_round]) for name in each_round[0]}
    cpu, rate = _scaling_ratios(found, most)
    by_round = [_scaling_ratios(r, most) for r in each_round]
    return {
        "writers": most,
        **{name: {**s.to_dict(), "appends": s.appends,
                  "cpu_per_item": Cpu(s.client_cpu, s.backend_cpu).per(s.count).to_dict()}
           for name, s in found.items()},
        "cpu_growth": _ratio(_cpu_each(found[f"{SHARED}_{most}"]),
                             _cpu_each(found[f"{SHARED}_1"])),
        "raw_cpu_growth": _ratio(_cpu_each(found[f"{FLOOR}_{most}"]),
                                 _cpu_each(found[f"{FLOOR}_1"])),
        "round_cpu_ratios": [c for c, _ in by_round if c is not None],
        "round_rate_ratios": [r for _, r in by_round if r is not None],
        "t3_cpu": median_ratio([c for c, _ in by_round if c is not None]),
        "t3_cpu_pooled": cpu,
        "t3_appends": round(found[f"{SHARED}_{most}"].appends
                            / found[f"{SHARED}_{most}"].count, 3),
        "t3_rate": median_ratio([r for _, r in by_round if r is not None]),
        "t3_rate_pooled": rate,
        "t3_vs_floor": _ratio(found[f"{SHARED}_{most}"].rate, found[f"{FLOOR}_{most}"].rate),
        # information: the same rate ratio over raw inserts that commit in insert order
        # (PostgreSQL only; SQLite's raw inserts do already), as an ordered log must
        **({"t3_rate_ordered": median_ratio([x for x in (
            _scaling_ratios(r, most, ORDERED)[1] for r in each_round) if x is not None])}
           if ORDERED in roles else {}),
    }


def _cpu_each(s: Sample) -> float:
    return (s.client_cpu + s.backend_cpu) / s.count


def _scaling_ratios(found: dict[str, Sample], most: int,
                    floor: str = FLOOR) -> tuple[float | None, float | None]:
    """T3's CPU ratio (CPU per claim (most)/(1) over raw's) and rate ratio (claims/s
    (most)/(1) over raw's) of one set of runs, raw being the processes of role ``floor``
    (the plain raw floor, or the ordered one)."""
    claims_1, claims_n = found[f"{SHARED}_1"], found[f"{SHARED}_{most}"]
    raw_1, raw_n = found[f"{floor}_1"], found[f"{floor}_{most}"]
    return (_ratio(_cpu_each(claims_n) * _cpu_each(raw_1),
                   _cpu_each(claims_1) * _cpu_each(raw_n)),
            _ratio(claims_n.rate * raw_1.rate, claims_1.rate * raw_n.rate))


def replay(kind: str, settings: Settings, workdir: Path) -> dict[str, Any]:
    """T4: read-and-decode, audit and rebuild of a ledger of each of ``replay_events``."""
    rows: dict[int, list[dict[str, Any]]] = {}
    for events in settings.replay_events:
        with scratch_store(kind, workdir, settings.postgres_url, f"replay{events}") as url:
            replay_memory.grown(url, events)
            rows[events] = replay_memory.measure(kind, url)
    small, large = min(rows), max(rows)
    at = {r["kind"]: r for r in rows[large]}
    before = {r["kind"]: r for r in rows[small]}
    return {
        "sizes": [small, large], "by_size": {str(n): found for n, found in rows.items()},
        "t4_audit": at["audit"]["cpu_vs_read"], "t4_audit_wall": at["audit"]["vs_read"],
        "t4_rebuild": at["rebuild"]["cpu_vs_read"],
        "t4_rebuild_wall": at["rebuild"]["vs_read"],
        "t4_rss": max(_ratio(at[k]["peak_rss_mib"], before[k]["peak_rss_mib"]) or 0.0
                      for k in ("audit", "rebuild")),
    }


def _round_robin(ledger: Ledger, hosts: list[str]) -> Callable[[], object]:
    turn = itertools.cycle(hosts)
    return lambda: claim_new(ledger, next(turn))


def many_hosts(ledger: Ledger, count: int, batch: int = 500) -> list[str]:
    """``count`` new hosts, each claimed on once: registered by 16 threads at once (group
    commit), claimed on by batches of ``batch`` claims, one append each."""
    ledger.commits, was = GroupCommit(ledger.store, ledger.policy), ledger.commits
    try:
        with ThreadPoolExecutor(16) as pool:
            hosts = list(pool.map(lambda _: a_host(ledger), range(count), chunksize=64))
    finally:
        ledger.commits = was
    for start in range(0, count, batch):
        ledger.write_allocations(
            [{"consumer_uuid": new_id(), "allocations": {host: dict(FLAVOUR)},
              "expected_generation": None, "project_id": PROJECT, "user_id": USER}
             for host in hosts[start:start + batch]], request=REQUEST)
    return hosts


def scale(url: str, settings: Settings) -> dict[str, Any]:
    """T5: claims on ``scale_hosts`` hosts, each met once before, beside claims on 10, in
    :data:`SCALE_ROUNDS` short rounds; the ratio is the median of the rounds' (both sides
    cost the same per claim: one append, the host from the cache, so what moves a pooled
    ratio is whatever else the machine did during one turn)."""
    piece = settings.duration / SCALE_ROUNDS
    with open_ledger(url) as ledger, Meter(url) as meter:
        few = many_hosts(ledger, 10)
        many = many_hosts(ledger, settings.scale_hosts)
        on_many, on_few = _round_robin(ledger, many), _round_robin(ledger, few)
        rounds = by_round(meter, [lambda: run_for(on_many, piece).count,
                                  lambda: run_for(on_few, piece).count], SCALE_ROUNDS)
    spread, ten = (sum(turns, Taken()) for turns in zip(*rounds, strict=True))
    ratios = round_ratios(rounds)
    return {"hosts": settings.scale_hosts, "many": spread.to_dict(), "ten": ten.to_dict(),
            "round_ratios": ratios, "t5": median_ratio(ratios),
            "t5_pooled": _ratio(spread.rate, ten.rate),
            "t5_cpu": _ratio(ten.each.total, spread.each.total)}


def over_serve(url: str, settings: Settings) -> dict[str, Any]:
    """T6: ``serve --workers N`` with ``threads`` HTTP clients beside as many threads
    in-process, both group-committed, in alternating turns; the server's CPU (its process,
    its workers and their backends) and the clients' during the claims, from when every
    client has set up its host (two requests a client a turn, not counted)."""
    piece = settings.duration / ROUNDS
    clients = settings.threads
    workers = ["--workers", str(settings.serve_workers)]
    with open_ledger(url) as ledger, Meter(url) as meter, \
            spawned(url.replace(f"&{POOL}", ""), args=workers) as port:  # serve's own pool
        server = child_with(f"127.0.0.1:{port}")
        if server is None:
            raise RuntimeError(f"no serve process on port {port} among this one's children")
        operations = [claimer(ledger, a_host(ledger)) for _ in range(clients)]
        last = [0.0]

        def in_process() -> int:
            sample = grouped(ledger, operations, piece)
            last[0] = sample.rate
            return sample.count

        in_process()  # warm-up, and a first rate
        with Meter(url, server, descendants=True) as serving:
            local, remote, by_server = Taken(), Taken(), Taken()
            for _ in range(ROUNDS // 2):
                local = local + timed(meter, in_process)
                each = max(int(last[0] * piece) // clients, 5)
                marks: list[Cpu] = []  # both sides' CPU once every client has its host
                rate = over_http(port, clients, each * clients, started=partial(
                    _read_both, marks, meter, serving))
                remote = remote + Taken(each * clients, each * clients / rate,
                                        meter.read() - marks[0])
                by_server = by_server + Taken(each * clients, 0.0, serving.read() - marks[1])
    return {"clients": clients, "workers": settings.serve_workers,
            "in_process": local.to_dict(), "over_http": remote.to_dict(),
            "server_cpu_per_claim": by_server.each.to_dict(),
            "t6": _ratio(remote.rate, local.rate),
            "t6_cpu": _ratio(local.each.total, by_server.each.total)}


def _read_both(marks: list[Cpu], meter: Meter, serving: Meter) -> None:
    marks[:] = [meter.read(), serving.read()]


def cpu_buckets(url: str, settings: Settings) -> dict[str, Any]:
    """A single claim's CPU by bucket (``benchmarks/breakdown.py`` by this thread's CPU
    clock), with its backends' CPU as one more bucket."""
    with open_ledger(url) as ledger, Meter(url) as meter:
        host = a_host(ledger)
        before = meter.read()
        parts = claim_breakdown(ledger, host, settings.breakdown_claims, time.thread_time)
        backend = (meter.read() - before).backend
    parts["parts_us"]["database backend (server process)"] = round(
        backend / settings.breakdown_claims * 1e6, 1)
    return parts


def measure(kind: str, settings: Settings, workdir: Path,
            progress: Progress) -> dict[str, Any] | None:
    """Every T figure of one kind of store (``None`` for the in-memory store: no database,
    no raw rows to compare with)."""
    if kind == "memory":
        return None
    found: dict[str, Any] = {}
    pg = settings.postgres_url
    with scratch_store(kind, workdir, pg, "ratios") as url:
        progress(f"{kind}: T1, T2: grouped, raw, single and one-row, alternating")
        found["batching"] = batching(url, settings)
        found["buckets"] = cpu_buckets(url, settings)
    with scratch_store(kind, workdir, pg, "scaling") as url:
        found["scaling"] = scaling(url, settings, lambda line: progress(f"{kind}: {line}"))
    progress(f"{kind}: T4: replay of {' and '.join(f'{n:,}' for n in settings.replay_events)}"
             " events")
    found["replay"] = replay(kind, settings, workdir)
    with scratch_store(kind, workdir, pg, "scale") as url:
        progress(f"{kind}: T5: claims on {settings.scale_hosts:,} hosts and on 10")
        found["scale"] = scale(url, settings)
    with scratch_store(kind, workdir, pg, "serve") as url:
        progress(f"{kind}: T6: serve --workers {settings.serve_workers} with "
                 f"{settings.threads} clients and in-process")
        found["serve"] = over_serve(url, settings)
    found["targets"] = [t.to_dict() for t in targets(kind, found)]
    return found


def targets(store: str, found: dict[str, Any]) -> list[Target]:
    """T1-T6 of one store's figures."""
    b, w, r = found["batching"], found["scaling"], found["replay"]
    s, h = found["scale"], found["serve"]
    t1 = 3.0 if store == "postgresql" else 5.0
    small, large = r["sizes"]
    rows = [
        ("T1", f"grouped claim CPU / CPU of its {b['rows_per_claim']:.2g} rows raw",
         f"<= {t1:g}", b["t1"], _at_most(t1), b["t1_wall"], b["t1_vs_floor"]),
        ("T2", "single claim CPU / grouped claim CPU", "<= 1.5", b["t2"], _at_most(1.5),
         b["t2_wall"], b["t2_vs_floor"]),
        ("T3", f"CPU/claim ({w['writers']})/(1) over raw's, median", "<= 1.1",
         w["t3_cpu"], _at_most(1.1), w["t3_cpu_pooled"], None),
        ("T3", f"appends per claim, {w['writers']} writers", "<= 1.05", w["t3_appends"],
         _at_most(1.05), None, None),
        ("T3", f"claims/s ({w['writers']})/(1) over raw floor's, median", ">= 0.8",
         w["t3_rate"], _at_least(0.8), w["t3_rate_pooled"], w["t3_vs_floor"]),
        ("T4", f"audit / raw read-and-decode ({large:,} events)", ">= 0.5", r["t4_audit"],
         _at_least(0.5), r["t4_audit_wall"], None),
        ("T4", f"rebuild / raw read-and-decode ({large:,} events)", ">= 0.4",
         r["t4_rebuild"], _at_least(0.4), r["t4_rebuild_wall"], None),
        ("T4", f"peak RSS {large:,} / {small:,} events", "<= 1.1", r["t4_rss"],
         _at_most(1.1), None, None),
        ("T5", f"claims/s on {s['hosts']:,} hosts / on 10, median",
         ">= 0.9", s["t5"], _at_least(0.9), s["t5_pooled"], None),
        ("T6", f"serve --workers {h.get('workers', 1)}, {h['clients']} clients / in-process "
                "claims/s", ">= 0.7", h["t6"],
         _at_least(0.7), h["t6"], None),
    ]
    return [Target(key, store, name, goal, value, check(value), wall, floor)
            for key, name, goal, value, check, wall, floor in rows]


def table(ratios: dict[str, Any]) -> str:
    """The T table (``measured`` is the ratio the goal is on: CPU for T1-T3 and T4's rates,
    claims/s for T5 and T6), then the CPU split of each side."""
    lines = ["CPU ratios (T1-T6), each side measured in this run in alternating turns; CPU is "
             "client + backend (SQLite has no backend)",
             f"  {'target':<4} {'store':<11}{'ratio':<50}{'goal':>8}{'measured':>10}  "
             f"{'':<8}{'wall':>7}{'vs 1-row':>9}"]
    for kind, found in ratios.items():
        if found is None:
            lines.append(f"  -    {kind:<11}not measured: no database")
            continue
        for t in found["targets"]:
            lines.append(
                f"  {t['key']:<4} {kind:<11}{t['name']:<50}{t['goal']:>8}"
                f"{_num(t['value']):>10}  {'met' if t['met'] else 'not met':<8}"
                f"{_num(t['wall']):>7}{_num(t['vs_floor']):>9}")
    lines.append("  (wall: the same ratio in wall-clock time, or for the medians of T3 and T5 "
                 "the ratio pooled over their rounds; vs 1-row: the old ratio of the "
                 "claims/s to one-row INSERTs/s)")
    for kind, found in ratios.items():
        if found is not None:
            lines.extend(_split(kind, found))
    return "\n".join(lines)


def _split(kind: str, found: dict[str, Any]) -> Iterator[str]:
    b, w, h = found["batching"], found["scaling"], found["serve"]
    yield f"  {kind}: CPU per item, us (client + backend):"
    for label, item in (
            (f"grouped claim ({b['threads']} threads, {b['claims_per_append']} per append)",
             b["grouped"]),
            (f"raw row (executemany of {b['raw_batch_rows']})", b["raw_rows"]),
            ("single claim", b["single"]),
            ("claim, 1 writer process", w[f"{SHARED}_1"]),
            (f"claim, {w['writers']} writer processes", w[f"{SHARED}_{w['writers']}"]),
            ("raw row, 1 writer process", w[f"{FLOOR}_1"]),
            (f"raw row, {w['writers']} writer processes", w[f"{FLOOR}_{w['writers']}"]),
            *((("ordered raw row, 1 writer process", w[f"{ORDERED}_1"]),
               (f"ordered raw row, {w['writers']} writer processes",
                w[f"{ORDERED}_{w['writers']}"])) if f"{ORDERED}_1" in w else ()),
            (f"claim in-process, {h['clients']} threads", h["in_process"]),
    ):
        yield _cpu_row(label, item["cpu_per_item"], item["rate"])
    yield _cpu_row(f"claim over HTTP (serve's processes), {h['clients']} clients",
                   h["server_cpu_per_claim"], h["over_http"]["rate"])
    if w.get("t3_rate_ordered") is not None:
        yield (f"    T3 claims/s ({w['writers']})/(1) over ordered raw rows' (each insert "
               f"taking the table's lock, as the append does), median: "
               f"{_num(w['t3_rate_ordered'])}")


def _cpu_row(label: str, cpu: dict[str, float], rate: float) -> str:
    return (f"    {label:<58}{cpu['client_us']:>9,.1f} + {cpu['backend_us']:>8,.1f} = "
            f"{cpu['total_us']:>9,.1f}   ({rate:,.0f}/s)")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def plot(ratios: dict[str, Any], directory: Path,
         command: str = "python -m benchmarks --ratios only --plot DIR") -> Path | None:
    """CPU per claim by bucket: a single claim's buckets per store, and the grouped claim
    and the raw rows of a claim as client and backend (``benchmarks/plots.py``)."""
    from benchmarks.plots import stacked

    measured = {k: v for k, v in ratios.items() if v is not None}
    if not measured:
        return None
    categories: list[str] = []
    columns: list[dict[str, float]] = []
    for kind, found in measured.items():
        b = found["batching"]
        categories.append(f"{kind}\nsingle")
        columns.append(dict(found["buckets"]["parts_us"]))
        for label, cpu, times in (("grouped", b["grouped"]["cpu_per_item"], 1.0),
                                  ("raw rows", b["raw_rows"]["cpu_per_item"],
                                   b["rows_per_claim"])):
            categories.append(f"{kind}\n{label}")
            columns.append({"client (not split)": cpu["client_us"] * times,
                            "database backend (server process)": cpu["backend_us"] * times})
    names = list(dict.fromkeys(name for column in columns for name in column))
    return stacked(directory / "cpu-per-claim.svg", title="CPU per claim by bucket (us)",
                   ylabel="us of CPU per claim", categories=categories,
                   parts={n: [c.get(n, 0.0) for c in columns] for n in names},
                   caption=command)
