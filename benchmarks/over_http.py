"""Claims over HTTP beside the in-process API, in one run: what the door costs.

Each client is a thread with its own keep-alive connection claiming new consumers (1 VCPU,
``PUT /allocations/{uuid}`` at 1.39, null consumer generation) on a host of its own, so the
figure is the server's throughput, not a race for one host. The in-process figure is the
same claims by :meth:`Ledger.claim` in one thread on the same kind of store, in the same
run. The server is ``allocation-ledger serve`` in its own process.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.http.server import spawned
from benchmarks.scratch import POOL, scratch_store

BIG = {"VCPU": {"total": 1_000_000}}
HEADERS = {"Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}


@dataclass(frozen=True)
class Figure:
    """Claims per second on one store: in-process, and over HTTP per number of clients."""

    store: str
    claims: int
    in_process: float
    over_http: dict[int, float]

    def ratios(self) -> dict[int, float]:
        """HTTP claims/s over in-process claims/s, per number of clients."""
        return {n: rate / self.in_process for n, rate in self.over_http.items()}


def in_process(url: str, claims: int) -> float:
    """Claims/s by the service API in one thread."""
    with open_ledger(url) as ledger:
        host = str(uuid4())
        ledger.register_provider(host, f"bench-{host}", inventories=BIG)
        ledger.claim(str(uuid4()), {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
        began = time.perf_counter()
        for _ in range(claims):
            ledger.claim(str(uuid4()), {host: {"VCPU": 1}}, None, project_id="p",
                         user_id="u")
        return claims / (time.perf_counter() - began)


def _call(conn: http.client.HTTPConnection, method: str, path: str, body: object) -> int:
    conn.request(method, path, json.dumps(body), HEADERS)
    response = conn.getresponse()
    response.read()
    return response.status


def _host(conn: http.client.HTTPConnection) -> str:
    host = str(uuid4())
    created = _call(conn, "POST", "/resource_providers", {"name": host, "uuid": host})
    stocked = _call(conn, "PUT", f"/resource_providers/{host}/inventories",
                    {"resource_provider_generation": 0, "inventories": BIG})
    if (created, stocked) != (200, 200):
        raise RuntimeError(f"setting up host {host} answered {created} and {stocked}")
    return host


def over_http(port: int, clients: int, claims: int) -> float:
    """Claims/s by ``clients`` concurrent HTTP clients, ``claims`` in all."""
    each = max(claims // clients, 1)
    barrier = threading.Barrier(clients + 1)
    failures: list[int] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            host = _host(conn)
        except BaseException:
            barrier.abort()  # the others (and the timer) stop waiting for this client
            raise
        body = {"allocations": {host: {"resources": {"VCPU": 1}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
        conn.close()  # a connection idle at the barrier can outlive the server's keep-alive
        barrier.wait()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for _ in range(each):
            status = _call(conn, "PUT", f"/allocations/{uuid4()}", body)
            if status != 204:
                failures.append(status)
        conn.close()

    with ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(client) for _ in range(clients)]
        barrier.wait()
        began = time.perf_counter()
        for f in futures:
            f.result()
        seconds = time.perf_counter() - began
    if failures:
        raise RuntimeError(f"{len(failures)} claims failed over HTTP: {failures[:5]}")
    return each * clients / seconds


def measure(kinds: Sequence[str], claims: int, clients: Sequence[int], postgres_url: str,
            workdir: Path, group_commit: Sequence[str] = ("off",),
            workers: Sequence[int] = (1,)) -> list[Figure]:
    """Every figure, store by store, with each ``serve --group-commit`` setting and each
    ``serve --workers`` count given, in turn (the store's figure is named
    ``store/group-commit-on`` or ``store/workers-2`` then, when more than the default
    is measured)."""
    figures = []
    for kind in kinds:
        with scratch_store(kind, workdir, postgres_url, "http") as url:
            local = in_process(url, claims)
            server_url = url.replace(f"&{POOL}", "")  # the server's default pool: 5 + 10
            for setting in group_commit:
                for count in workers:
                    args = ["--group-commit", setting, "--workers", str(count)]
                    with spawned(server_url, args=args) as port:
                        rates = {n: over_http(port, n, claims) for n in clients}
                    name = kind
                    if group_commit != ("off",):
                        name += f"/group-commit-{setting}"
                    if tuple(workers) != (1,):
                        name += f"/workers-{count}"
                    figures.append(Figure(name, claims, local, rates))
    return figures


def report(figures: Sequence[Figure]) -> str:
    """The figures as a table."""
    clients = sorted({n for f in figures for n in f.over_http})
    width = max(10, *(len(f.store) for f in figures))
    head = f"{'store':<{width}} in-process  " + "  ".join(
        f"HTTP x{n:<3} (ratio)" for n in clients)
    lines = [head, "-" * len(head)]
    for f in figures:
        cells = "  ".join(f"{f.over_http[n]:>8,.0f} ({f.ratios()[n]:4.0%})" for n in clients)
        lines.append(f"{f.store:<{width}} {f.in_process:>10,.0f}  {cells}")
    lines.append("(group commit: serve --group-commit; workers: serve --workers; the "
                 "in-process figure is the same for each)")
    lines.append("claims/s; ratio = HTTP claims/s / in-process claims/s (one thread)")
    return "\n".join(lines)
