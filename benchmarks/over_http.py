"""Claims over HTTP beside the in-process API, in one run: what the door costs.

Each client is an asyncio task of this process with its own keep-alive connection claiming
new consumers (1 VCPU, ``PUT /allocations/{uuid}`` at 1.39, null consumer generation) on a
host of its own, so the figure is the server's throughput, not a race for one host. The
clients are lean (:class:`Connection`): on a machine they share with the server, what they
spend is taken from the server. The in-process figure is the same claims by
:meth:`Ledger.claim` in one thread on the same kind of store, in the same run. The server
is ``allocation-ledger serve`` in its own process.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.http.server import spawned
from benchmarks.scratch import POOL, scratch_store

BIG = {"VCPU": {"total": 1_000_000}}
#: the headers of every request but ``Host`` and ``Content-Length``
HEAD = b"Content-Type: application/json\r\nOpenStack-API-Version: placement 1.39\r\n"


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


class Connection:
    """One keep-alive HTTP/1.1 connection of the load generator: each request written as
    bytes, each answer read by its status line and ``Content-Length``. It costs the cores it
    shares with the server a fraction of what ``http.client`` costs (which parses every
    answer's headers with the ``email`` package), so that on a machine the two share the
    figure is the server's, not its clients'."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 port: int) -> None:
        self._reader, self._writer = reader, writer
        self._host = b"Host: 127.0.0.1:%d\r\n" % port

    @classmethod
    async def open(cls, port: int) -> Connection:
        """A connection to the server on 127.0.0.1:``port``."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, port)

    async def call(self, method: str, path: str, body: bytes) -> int:
        """Send one request with a JSON ``body``; the answer's status (its body is read and
        dropped)."""
        self._writer.write(b"%s %s HTTP/1.1\r\n%s%sContent-Length: %d\r\n\r\n%s" % (
            method.encode(), path.encode(), self._host, HEAD, len(body), body))
        try:
            head = await self._reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as err:
            raise RuntimeError(f"{method} {path}: the server closed the connection") from err
        length = 0
        for line in head.lower().split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                raise RuntimeError(f"{method} {path}: answered in chunks, which this "
                                   "client does not read")
        if length:
            await self._reader.readexactly(length)
        return int(head[9:12])

    async def close(self) -> None:
        """Close the connection."""
        self._writer.close()
        await self._writer.wait_closed()


async def _host(port: int) -> str:
    """A new host with room for every claim, set up on a connection of its own (a connection
    left idle while the other clients set up theirs could outlive the server's keep-alive)."""
    host = str(uuid4())
    conn = await Connection.open(port)
    try:
        created = await conn.call("POST", "/resource_providers",
                                  json.dumps({"name": host, "uuid": host}).encode())
        if created != 200:
            raise RuntimeError(f"registering host {host} answered {created}")
        stocked = await conn.call("PUT", f"/resource_providers/{host}/inventories", json.dumps(
            {"resource_provider_generation": 0, "inventories": BIG}).encode())
        if stocked != 200:
            raise RuntimeError(f"stocking host {host} answered {stocked}")
    finally:
        await conn.close()
    return host


def claim_body(host: str) -> bytes:
    """The body of ``PUT /allocations/{uuid}`` claiming 1 VCPU on ``host`` for a new
    consumer (microversion 1.39)."""
    return json.dumps({"allocations": {host: {"resources": {"VCPU": 1}}}, "project_id": "p",
                       "user_id": "u", "consumer_generation": None,
                       "consumer_type": "INSTANCE"}).encode()


async def _claims(conn: Connection, host: str, count: int) -> list[int]:
    """``count`` new consumers claim on ``host``; the statuses that were not 204."""
    body = claim_body(host)
    failures = []
    for _ in range(count):
        status = await conn.call("PUT", f"/allocations/{uuid4()}", body)
        if status != 204:
            failures.append(status)
    return failures


async def _over_http(port: int, clients: int, each: int,
                     started: Callable[[], object] | None) -> float:
    hosts = await asyncio.gather(*(_host(port) for _ in range(clients)))
    conns = await asyncio.gather(*(Connection.open(port) for _ in range(clients)))
    try:
        if started is not None:
            started()
        began = time.perf_counter()
        failed = await asyncio.gather(*(_claims(c, h, each)
                                        for c, h in zip(conns, hosts, strict=True)))
        seconds = time.perf_counter() - began
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    failures = [status for statuses in failed for status in statuses]
    if failures:
        raise RuntimeError(f"{len(failures)} claims failed over HTTP: {failures[:5]}")
    return each * clients / seconds


def over_http(port: int, clients: int, claims: int,
              started: Callable[[], object] | None = None) -> float:
    """Claims/s by ``clients`` concurrent HTTP clients (:class:`Connection`, one asyncio
    task each, in this thread), ``claims`` in all, timed from when every client has set up
    its host and opened its connection (when ``started`` is called)."""
    return asyncio.run(_over_http(port, clients, max(claims // clients, 1), started))


def measure(kinds: Sequence[str], claims: int, clients: Sequence[int], postgres_url: str,
            workdir: Path, group_commit: Sequence[str] = ("off",),
            workers: Sequence[int] = (1,), loops: Sequence[str] = ("auto",)) -> list[Figure]:
    """Every figure, store by store, with each ``serve --group-commit`` setting, each
    ``serve --workers`` count and each ``serve --loop`` given, in turn (the store's figure
    is named ``store/group-commit-on``, ``store/workers-2`` or ``store/loop-asyncio`` then,
    when more than the default is measured)."""
    figures = []
    for kind in kinds:
        with scratch_store(kind, workdir, postgres_url, "http") as url:
            local = in_process(url, claims)
            server_url = url.replace(f"&{POOL}", "")  # the server's default pool: 5 + 10
            for setting, count, loop in itertools.product(group_commit, workers, loops):
                args = ["--group-commit", setting, "--workers", str(count), "--loop", loop]
                with spawned(server_url, args=args) as port:
                    rates = {n: over_http(port, n, claims) for n in clients}
                name = kind
                if group_commit != ("off",):
                    name += f"/group-commit-{setting}"
                if tuple(workers) != (1,):
                    name += f"/workers-{count}"
                if tuple(loops) != ("auto",):
                    name += f"/loop-{loop}"
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
    lines.append("(group commit: serve --group-commit; workers: serve --workers; loop: "
                 "serve --loop; the in-process figure is the same for each)")
    lines.append("claims/s; ratio = HTTP claims/s / in-process claims/s (one thread)")
    return "\n".join(lines)
