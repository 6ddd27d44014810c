"""``serve --workers N``: several server processes on one address, each over its own store
connections. What one worker writes the other reads (its candidates index follows the
store), concurrent claims through both never oversubscribe a host and every acknowledged
claim is in the ledger, a retried ``Idempotency-Key`` is answered from the ledger's record
by whichever worker gets it, ``/metrics`` counts every worker's requests, SIGTERM stops
them all, and a port in use is one line.

Which worker serves a connection is read from ``/proc``: the worker holding the server
side of it (``/proc/net/tcp`` gives the socket's inode, ``/proc/PID/fd`` its holder).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from allocation_ledger.bootstrap import open_ledger
from tests.http.server import Client, running_server
from tests.http.world import LATEST
from tests.stores import postgres_schema_url

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc")

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
WORKERS = 2


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def server_pids(port: int) -> set[int]:
    """The processes of this test's servers that hold a socket of ``port``."""
    inodes = _inodes(lambda local, remote: local[1] == port)
    return {pid for pid in descendants(os.getpid()) if _holds(pid, inodes)}


def serving(client: Client, port: int) -> int:
    """The worker that holds the server side of ``client``'s connection."""
    client.call("GET", "/")  # connected and accepted
    assert client.conn is not None and client.conn.sock is not None
    mine = client.conn.sock.getsockname()[1]
    inodes = _inodes(lambda local, remote: local[1] == port and remote[1] == mine)
    holders = [pid for pid in descendants(os.getpid()) if _holds(pid, inodes)]
    assert len(holders) == 1, holders
    return holders[0]


def _inodes(wanted: object) -> set[str]:
    found = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            local, remote = (_address(fields[1]), _address(fields[2]))
            if wanted(local, remote):  # type: ignore[operator]
                found.add(fields[9])
    return found - {"0"}


def _address(text: str) -> tuple[str, int]:
    host, port = text.split(":")
    return host, int(port, 16)


def _holds(pid: int, inodes: set[str]) -> bool:
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return any(re.fullmatch(r"socket:\[(\d+)\]", link) and link[8:-1] in inodes
               for link in links)


@pytest.fixture(scope="module", params=STORES)
def served(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """(store URL, port) of ``serve --workers 2`` over a fresh store of each kind."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('workers') / 'ledger.db'}"
        with running_server(url, args=["--workers", str(WORKERS)]) as port:
            yield url, port
    else:
        with postgres_schema_url() as url, running_server(
                url, args=["--workers", str(WORKERS)]) as port:
            yield url, port


def spread_clients(port: int, per_worker: int) -> dict[int, list[Client]]:
    """``per_worker`` clients connected to each worker, by pid: connections are opened
    until every worker holds that many. The kernel, not the test, picks a connection's
    worker, and on a busy machine it hands many in a row to the worker that is waiting in
    ``accept`` while the other is off the CPU: after a connection to a worker that has its
    share, the next waits a little longer, so the other gets to accept one."""
    by_worker: dict[int, list[Client]] = {}
    pause = 0.0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        client = Client(port)
        mine = by_worker.setdefault(serving(client, port), [])
        if len(mine) < per_worker:
            mine.append(client)
        else:
            client.close()
            pause = min(2 * pause or 0.002, 0.1)
            time.sleep(pause)
        if len(by_worker) == WORKERS and all(len(c) == per_worker for c in by_worker.values()):
            return by_worker
    for clients in by_worker.values():
        for client in clients:
            client.close()
    raise AssertionError(f"connections never reached every worker {per_worker} times in "
                         f"60 s: { {pid: len(c) for pid, c in by_worker.items()} }")


@pytest.fixture
def workers(served: tuple[str, int]) -> Iterator[list[Client]]:
    """One client connected to each worker."""
    _, port = served
    clients = [c for by in spread_clients(port, 1).values() for c in by]
    yield clients
    for client in clients:
        client.close()


def host(client: Client, vcpu: int) -> str:
    uuid = str(uuid4())
    assert client.call("POST", "/resource_providers", {"name": uuid, "uuid": uuid},
                       LATEST).status == 200
    assert client.call("PUT", f"/resource_providers/{uuid}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": vcpu}}}, LATEST).status == 200
    return uuid


def claim(client: Client, vm: str, on: str, vcpu: int = 1,
          key: str | None = None) -> int:
    return client.call("PUT", f"/allocations/{vm}", {
        "allocations": {on: {"resources": {"VCPU": vcpu}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"},
        LATEST, headers={"Idempotency-Key": key} if key else None).status


def candidates(client: Client, vcpu: int) -> set[str]:
    answer = client.call("GET", f"/allocation_candidates?resources=VCPU:{vcpu}", version=LATEST)
    assert answer.status == 200, answer.body
    return set(answer.body["provider_summaries"])


def test_each_worker_is_a_process_of_its_own(served: tuple[str, int],
                                             workers: list[Client]) -> None:
    _, port = served
    pids = {serving(c, port) for c in workers}
    assert len(pids) == WORKERS
    assert pids <= server_pids(port)


def test_what_one_worker_writes_the_other_reads(workers: list[Client]) -> None:
    a, b = workers
    before = candidates(b, 3)  # b's candidates index is built now
    new = host(a, 4)
    assert candidates(b, 3) == before | {new}  # b's index followed a's registration
    assert claim(a, str(uuid4()), new, 2) == 204
    assert new not in candidates(b, 3)  # and a's claim: 2 of 4 left
    assert new in candidates(b, 2)
    assert b.call("GET", f"/resource_providers/{new}/usages").body["usages"] == {"VCPU": 2}


def test_concurrent_claims_through_both_workers_never_oversubscribe(
        served: tuple[str, int], workers: list[Client]) -> None:
    url, port = served
    capacity, clients, each = 6, 6, 5
    hosts = [host(workers[0], capacity), host(workers[1], capacity)]
    acknowledged: dict[str, list[str]] = {h: [] for h in hosts}
    refused: list[int] = []
    barrier = threading.Barrier(clients)
    # each worker serves half the clients, whichever worker the kernel would have chosen
    spread = [c for by in spread_clients(port, clients // WORKERS).values() for c in by]

    def run(n: int) -> None:
        client = spread[n]
        barrier.wait()
        for i in range(each):
            target, vm = hosts[(n + i) % 2], str(uuid4())
            status = claim(client, vm, target)
            if status == 204:
                acknowledged[target].append(vm)
            else:
                refused.append(status)
        client.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(refused) <= {409}, refused
    assert sum(map(len, acknowledged.values())) + len(refused) == clients * each
    with open_ledger(url) as ledger:  # the ledger itself, not a worker's caches
        for h, vms in acknowledged.items():
            assert len(vms) <= capacity
            assert ledger.usages_in_tree(h)[h].get("VCPU", 0) == len(vms)
            for vm in vms:
                assert ledger.consumer(vm).allocations[h] == {"VCPU": 1}
    assert len(refused) >= clients * each - 2 * capacity  # the hosts were filled


def test_a_retried_key_on_the_other_worker_gets_the_first_answer(
        workers: list[Client]) -> None:
    a, b = workers
    target, vm, key = host(a, 4), str(uuid4()), f"nova-{uuid4()}"
    assert claim(a, vm, target, 1, key) == 204
    assert a.call("DELETE", f"/allocations/{vm}").status == 204
    # run again, the request would claim anew; answered from the record, it changes nothing
    assert claim(b, vm, target, 1, key) == 204
    assert b.call("GET", f"/allocations/{vm}", version=LATEST).body["allocations"] == {}
    assert b.call("GET", f"/resource_providers/{target}/usages").body["usages"] == {"VCPU": 0}
    assert b.call("GET", f"/ledger/commands/{key}").body["applied"] is True


def test_metrics_count_the_requests_of_every_worker(workers: list[Client]) -> None:
    def claims_counted(client: Client) -> float:
        text = _metrics(client)
        pattern = (r'ledger_http_request_seconds_count\{method="PUT",'
                   r'route="/allocations/\{consumer_uuid\}",status="204"\} (\S+)')
        found = re.search(pattern, text)
        return float(found.group(1)) if found else 0.0

    a, b = workers
    before = claims_counted(a)
    target = host(a, 10)
    for client in (a, b, b):
        assert claim(client, str(uuid4()), target) == 204
    assert claims_counted(a) == claims_counted(b) == before + 3


def _metrics(client: Client) -> str:
    assert client.conn is not None
    client.conn.request("GET", "/metrics")
    return client.conn.getresponse().read().decode()


def test_sigterm_stops_every_worker(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}",
                        args=["--workers", str(WORKERS)]) as port:
        processes = server_pids(port)
        assert len(processes) == WORKERS + 1  # the manager and its workers
    # running_server sent SIGTERM to the manager and waited for it
    deadline = time.monotonic() + 10
    while (alive := {pid for pid in processes if Path(f"/proc/{pid}").exists()
                     and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]}):
        assert time.monotonic() < deadline, f"still running: {alive}"
        time.sleep(0.1)


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", "from allocation_ledger.cli import main; "
             "raise SystemExit(main())", "serve", "--workers", "2",
             "--url", f"sqlite:///{tmp_path / 'l.db'}", "--bind", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stderr == (f"allocation-ledger serve: cannot listen on 127.0.0.1:{port}: "
                           "Address already in use\n")
