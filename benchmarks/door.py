"""What ``serve``'s door costs, layer by layer: server CPU per request, in one run.

    python -m benchmarks.door [--requests 6400] [--clients 32] [--rounds 3] [--json]

T6 sets claims over HTTP beside claims in-process; this splits what lies between. Each
side is a server process under uvicorn as ``serve`` runs it (uvloop where installed,
httptools, one worker), driven by the same lean clients (``benchmarks/over_http.py``: one
keep-alive connection each, one request in flight each), and its CPU per request is read
from ``/proc/<pid>/stat`` (every thread of the process):

- ``uvicorn, bare ASGI app``: reads the body, answers 204 (``benchmarks/door_apps.py``);
- ``Starlette, one route``: the same through Starlette's routing and middleware;
- ``... + worker thread``: the route parses the body in a worker thread, as ``serve``'s
  endpoints run their handlers;
- ``serve: GET /``: the version document (no store read): ``serve``'s own middleware,
  endpoint wrapper, access log and metrics around a trivial handler;
- ``serve: claim``: ``PUT /allocations/{uuid}`` claiming 1 VCPU on the client's own host
  (SQLite store, group commit on, as ``serve`` defaults), with and without the access log;
- in this process, no HTTP: as many threads as clients claiming through ``Ledger.claim``,
  and through the handler of ``PUT /allocations/{uuid}`` (the request's context with a new
  request id, the body's validation and ``Ledger.write_allocations``: what ``serve`` runs
  in its worker threads, and the id its event loop makes), group commit
  on, each on a host of its own; CPU by ``time.process_time``, taken while no client runs.

Sides take turns in an order that rotates each round; the figures are pooled over the
rounds. Needs the ``http`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from uuid import uuid4

from allocation_ledger.http.server import free_port, spawned
from benchmarks.cpu import process_cpu
from benchmarks.over_http import Connection, _host, claim_body

CLAIM = "claim"
#: the in-process sides' "method": through ``Ledger.claim``, or the handler
LEDGER, HANDLER = "in-process claim", "in-process handler"
#: seconds of an in-process side's turn
IN_PROCESS_SECONDS = 2.0


class InProcess:
    """Claims without HTTP, a thread per client, on a SQLite store of their own: through
    ``Ledger.claim``, or through the handler of ``PUT /allocations/{uuid}``."""

    def __init__(self, stack: ExitStack, workdir: Path, clients: int) -> None:
        from allocation_ledger.bootstrap import open_ledger
        from benchmarks.workload import a_host

        self.ledger = stack.enter_context(open_ledger(f"sqlite:///{workdir / 'door.db'}"))
        self.hosts = [a_host(self.ledger) for _ in range(clients)]

    def operations(self, handler: bool) -> list[Callable[[], object]]:
        """One operation per thread: a claim on its own host."""
        if not handler:  # the claim the HTTP sides send: 1 VCPU, a new consumer
            return [partial(self._claim, h) for h in self.hosts]
        from allocation_ledger.http import microversion
        from allocation_ledger.http.allocations import put_allocations
        from allocation_ledger.http.auth import Caller
        from allocation_ledger.http.context import Ctx, _guarded

        version = microversion.requested(f"{microversion.SERVICE} 1.39")
        caller = Caller("admin", "admin")

        def put(body: bytes) -> Callable[[], object]:
            def claim() -> object:
                ctx = Ctx(self.ledger, version, caller, f"req-{uuid4()}",
                          {"consumer_uuid": str(uuid4())}, {}, body, None,
                          content_type="application/json", method="PUT")
                reply = _guarded(put_allocations, ctx)  # as serve runs it
                if reply.status != 204:
                    raise RuntimeError(f"the handler answered {reply.status}")
                return reply
            return claim

        return [put(claim_body(h)) for h in self.hosts]

    def _claim(self, host: str) -> object:
        return self.ledger.claim(str(uuid4()), {host: {"VCPU": 1}}, None, project_id="p",
                                 user_id="u")

    def turn(self, side: Side, seconds: float) -> None:
        """Claims for ``seconds``, their CPU and count added to ``side``."""
        from benchmarks.targets import grouped

        before = time.process_time()
        sample = grouped(self.ledger, self.operations(side.method == HANDLER), seconds)
        side.cpu += time.process_time() - before
        side.seconds += sample.seconds
        side.requests += sample.count


@dataclass
class Side:
    """One server measured: its label, port, process id and the request its clients send
    (``CLAIM``: a claim on each client's own host, set up first)."""

    label: str
    port: int
    pid: int
    method: str
    path: str
    hosts: Sequence[str] = ()
    requests: int = 0
    seconds: float = 0.0
    cpu: float = 0.0

    def row(self) -> dict[str, float | str]:
        """Requests/s and server CPU per request (µs), pooled over the rounds."""
        return {"side": self.label, "requests_per_s": round(self.requests / self.seconds),
                "server_cpu_us": round(self.cpu / self.requests * 1e6, 1)}


async def _drive(side: Side, clients: int, each: int) -> float:
    """``each`` requests by each of ``clients`` connections; the seconds they took."""
    conns = await asyncio.gather(*(Connection.open(side.port) for _ in range(clients)))
    hosts = list(side.hosts) or [str(uuid4())] * clients

    async def client(conn: Connection, host: str) -> None:
        body = claim_body(host) if side.method == "PUT" else b""
        for _ in range(each):
            path = side.path.replace("{uuid}", str(uuid4()))
            status = await conn.call(side.method, path, body)
            if status >= 300:
                raise RuntimeError(f"{side.label}: {side.method} {path} answered {status}")

    began = time.perf_counter()
    try:
        await asyncio.gather(*(client(c, h) for c, h in zip(conns, hosts, strict=False)))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return time.perf_counter() - began


def _turn(side: Side, clients: int, each: int, local: InProcess) -> None:
    if side.method in (LEDGER, HANDLER):
        local.turn(side, IN_PROCESS_SECONDS)
        return
    before = process_cpu(side.pid)
    seconds = asyncio.run(_drive(side, clients, each))
    side.cpu += process_cpu(side.pid) - before
    side.seconds += seconds
    side.requests += clients * each


@contextmanager
def _app(kind: str) -> Iterator[tuple[int, int]]:
    """A trivial app of ``benchmarks/door_apps.py`` in a process of its own: (port, pid)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.door_apps", kind, str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {kind} app did not start") from None
                time.sleep(0.05)
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve_pid(port: int) -> int:
    from benchmarks.cpu import child_with

    pid = child_with(f"127.0.0.1:{port}")
    if pid is None:
        raise RuntimeError(f"no serve process on port {port} among this one's children")
    return pid


def measure(requests: int, clients: int, rounds: int, workdir: Path) -> list[Side]:
    """Every side, ``requests`` a turn (the in-process ones :data:`IN_PROCESS_SECONDS`),
    ``rounds`` turns each."""
    each = max(requests // clients, 1)
    sides: list[Side] = []
    with ExitStack() as stack:
        for kind, label in (("bare", "uvicorn, bare ASGI app"),
                            ("route", "Starlette, one route"),
                            ("thread", "Starlette, one route + worker thread")):
            port, pid = stack.enter_context(_app(kind))
            sides.append(Side(label, port, pid, "PUT", "/allocations/{uuid}"))
        for label, args, method, path in (
                ("serve: GET / (no store read)", [], "GET", "/"),
                ("serve: claim", [], "PUT", CLAIM),
                ("serve --no-access-log: claim", ["--no-access-log"], "PUT", CLAIM)):
            url = f"sqlite:///{workdir / f'door-{len(sides)}.db'}"
            port = stack.enter_context(spawned(url, args=args))
            claims = path == CLAIM
            hosts = asyncio.run(_hosts(port, clients)) if claims else []
            sides.append(Side(label, port, _serve_pid(port), method,
                              "/allocations/{uuid}" if claims else path, hosts))
        local = InProcess(stack, workdir, clients)
        sides += [Side(f"{clients} threads, Ledger.claim", 0, 0, LEDGER, ""),
                  Side(f"{clients} threads, the PUT /allocations handler", 0, 0, HANDLER, "")]
        for side in sides:  # warm-up, not counted
            if side.method in (LEDGER, HANDLER):
                local.turn(Side("", 0, 0, side.method, ""), 0.2)
            else:
                asyncio.run(_drive(side, clients, max(each // 4, 1)))
        for round_ in range(rounds):
            shift = round_ % len(sides)
            for side in [*sides[shift:], *sides[:shift]]:
                _turn(side, clients, each, local)
    return sides


async def _hosts(port: int, clients: int) -> list[str]:
    return list(await asyncio.gather(*(_host(port) for _ in range(clients))))


def report(sides: Sequence[Side], clients: int) -> str:
    """The table: requests/s and server CPU per request by side."""
    lines = [f"server CPU per request, {clients} clients (each server a process of its own; "
             "in-process: this process's CPU, no HTTP):",
             f"  {'side':<40}{'requests/s':>12}{'CPU us/request':>16}"]
    for side in sides:
        row = side.row()
        lines.append(f"  {side.label:<40}{row['requests_per_s']:>12,}"
                     f"{row['server_cpu_us']:>16,.1f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=6400, help="requests a side a turn")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        sides = measure(args.requests, args.clients, args.rounds, Path(workdir))
    print(json.dumps([s.row() for s in sides], indent=2) if args.json
          else report(sides, args.clients))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
