"""CPU time of a benchmark, split between the client (Python) and the database's backends.

Client CPU is ``time.process_time`` of this process (every thread), or the user + system
time ``/proc/<pid>/stat`` gives for another process of this machine (a writer, ``serve``).
PostgreSQL's backend CPU is the time on CPU that ``/proc/<pid>/schedstat`` gives for each
backend serving the process: the backends whose client port is one of the process's own
TCP sockets, found in ``pg_stat_activity`` (so the server must run on this machine, reached
over TCP). SQLite runs in the client's process: it has no backend, its CPU is the client's.

A :class:`Meter` reads both at once; the difference of two readings is the CPU spent in
between. A backend that closes between two readings takes the CPU it spent since the first
one with it: pools that keep their connections (as the ledger's and the raw floor's do)
lose nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from benchmarks.scratch import conninfo

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Cpu:
    """Seconds of CPU: the client's and its database backends'."""

    client: float = 0.0
    backend: float = 0.0

    @property
    def total(self) -> float:
        """Client and backend together."""
        return self.client + self.backend

    def __add__(self, other: Cpu) -> Cpu:
        return Cpu(self.client + other.client, self.backend + other.backend)

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.client - other.client, self.backend - other.backend)

    def per(self, count: float) -> Cpu:
        """This CPU shared among ``count`` operations (zero when there were none)."""
        if count <= 0:
            return Cpu()
        return Cpu(self.client / count, self.backend / count)

    def to_dict(self, unit: float = 1e6) -> dict[str, float]:
        """Client, backend and total, in microseconds by default."""
        return {"client_us": round(self.client * unit, 2),
                "backend_us": round(self.backend * unit, 2),
                "total_us": round(self.total * unit, 2)}


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``; 0 once gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)


def on_cpu(pid: int) -> float:
    """Seconds process ``pid`` has been on a CPU (``/proc/<pid>/schedstat``; 0 once gone)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0.0


def tcp_ports(pid: int) -> set[int]:
    """Local ports of the TCP sockets process ``pid`` holds open."""
    inodes: set[str] = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except (FileNotFoundError, PermissionError):
        return set()
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class Meter:
    """Reads the CPU of one client process and, on PostgreSQL, of the backends serving it.

    ``pid`` is this process by default (client CPU by ``time.process_time``), or another
    process of this machine. ``postgres_url`` is any URL of the server (``None``: no
    backend, as for SQLite); the meter's own connection is left out of the backends."""

    def __init__(self, postgres_url: str | None = None, pid: int | None = None, *,
                 descendants: bool = False) -> None:
        self._pid = pid
        #: with ``descendants``, ``pid``'s child processes (``serve --workers``) count too
        self._descendants = descendants and pid is not None
        self._clients: dict[int, float] = {}
        self._conn = (psycopg.connect(conninfo(postgres_url), autocommit=True)
                      if postgres_url and postgres_url.startswith("postgres") else None)
        self._own = self._conn.info.backend_pid if self._conn is not None else 0
        self._seen: dict[int, float] = {}

    def _processes(self) -> list[int]:
        me = self._pid or os.getpid()
        return [me, *descendants(me)] if self._descendants else [me]

    def backends(self) -> list[int]:
        """Process ids of the backends serving the client now."""
        if self._conn is None:
            return []
        ports = set().union(*(tcp_ports(pid) for pid in self._processes()))
        if not ports:
            return []
        rows = self._conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE client_port = ANY(%s) AND pid <> %s",
            (sorted(ports), self._own)).fetchall()
        return [int(r[0]) for r in rows]

    def read(self) -> Cpu:
        """CPU so far: the client's, and the backends' (each counted from when first met,
        and as last met once it is gone)."""
        if self._pid is None:
            client = time.process_time()
        else:  # each process counted from when first met, and as last met once gone
            for pid in self._processes():
                self._clients[pid] = process_cpu(pid)
            client = sum(self._clients.values())
        for pid in self.backends():
            self._seen[pid] = on_cpu(pid)
        return Cpu(client, sum(self._seen.values()))

    def close(self) -> None:
        """Close the meter's connection."""
        if self._conn is not None:
            self._conn.close()

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def measured(meter: Meter, work: Callable[[], object]) -> tuple[object, Cpu]:
    """``work()``'s result and the CPU it took."""
    before = meter.read()
    result = work()
    return result, meter.read() - before


def descendants(pid: int) -> list[int]:
    """The process ids of every live descendant of process ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], list(children.get(pid, []))
    while pending:
        child = pending.pop()
        found.append(child)
        pending += children.get(child, [])
    return found


def child_with(argument: str) -> int | None:
    """The process id of a child of this process with ``argument`` in its command line."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == me and argument in (entry / "cmdline").read_bytes().decode(
                    errors="replace").split("\0"):
                return int(entry.name)
        except (OSError, IndexError, ValueError):
            continue
    return None
