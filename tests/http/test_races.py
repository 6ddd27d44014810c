"""Racing HTTP clients: eight threads, each with its own connection, released together by a
barrier, 10 rounds per store (100 with --slow). Exactly one wins each round; nothing is
oversubscribed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from uuid import uuid4

import pytest

from tests.http.server import Answer, Client, running_server
from tests.http.world import LATEST, inventory, provider
from tests.stores import postgres_schema_url

THREADS = 8
# A short version of each race in the default run, the long trial (100 rounds) with --slow.
ROUNDS = [pytest.param(10, id="10-rounds"),
          pytest.param(100, id="100-rounds", marks=pytest.mark.slow)]
CONFLICT_CODES = {"placement.concurrent_update", "placement.undefined_code"}


def _race(ports: int | list[int], request: Callable[[Client, int], Answer]) -> list[Answer]:
    """Every thread sends ``request`` at the same moment (to the servers in turn); the
    answers, by thread."""
    barrier = threading.Barrier(THREADS)
    ports = ports if isinstance(ports, list) else [ports]
    clients = [Client(ports[i % len(ports)]) for i in range(THREADS)]
    for c in clients:
        c.call("GET", "/")  # connect before the race

    def one(i: int) -> Answer:
        barrier.wait(timeout=60)
        return request(clients[i], i)

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(one, i) for i in range(THREADS)]
            return [f.result() for f in futures]
    finally:
        for c in clients:
            c.close()


def _put(host: str, consumer: str, generation: int | None) -> Callable[[Client, int], Answer]:
    def send(client: Client, _: int) -> Answer:
        return client.call("PUT", f"/allocations/{consumer or uuid4()}", {
            "allocations": {host: {"resources": {"VCPU": 1}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": generation,
            "consumer_type": "INSTANCE"}, LATEST)
    return send


@pytest.mark.parametrize("rounds", ROUNDS)
def test_racing_new_consumers_for_the_last_unit(
        client: Client, server_port: int, rounds: int) -> None:
    for _ in range(rounds):
        host = provider(client, f"last-unit-{uuid4()}")
        inventory(client, host, VCPU=1)
        answers = _race(server_port, _put(host, "", None))
        assert sorted(a.status for a in answers) == [204] + [409] * (THREADS - 1)
        assert {a.code for a in answers if a.status == 409} <= CONFLICT_CODES
        held = client.call("GET", f"/resource_providers/{host}/allocations").body
        assert [a["resources"] for a in held["allocations"].values()] == [{"VCPU": 1}]
        usages = client.call("GET", f"/resource_providers/{host}/usages").body["usages"]
        assert usages == {"VCPU": 1}


@pytest.mark.parametrize("rounds", ROUNDS)
def test_racing_writers_of_one_consumer_generation(
        client: Client, server_port: int, rounds: int) -> None:
    host = provider(client, f"one-consumer-{uuid4()}")
    inventory(client, host, VCPU=THREADS)
    vm = str(uuid4())
    generation: int | None = None
    for round_ in range(rounds):
        answers = _race(server_port, _put(host, vm, generation))
        assert sorted(a.status for a in answers) == [204] + [409] * (THREADS - 1), round_
        assert {a.code for a in answers if a.status == 409} == {"placement.concurrent_update"}
        body = client.call("GET", f"/allocations/{vm}", version=LATEST).body
        generation = body["consumer_generation"]
        assert generation == round_ + 1
        assert body["allocations"][host]["resources"] == {"VCPU": 1}


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", ROUNDS)
def test_racing_through_two_servers_on_one_store(rounds: int) -> None:
    """Two server processes on one PostgreSQL store, four racing clients on each: the
    store's unique key decides, so still exactly one claim takes the last unit."""
    with postgres_schema_url() as url, running_server(url) as first, \
            running_server(url) as second:
        client = Client(first)
        for _ in range(rounds // 2):
            host = provider(client, f"two-servers-{uuid4()}")
            inventory(client, host, VCPU=1)
            answers = _race([first, second], _put(host, "", None))
            assert sorted(a.status for a in answers) == [204] + [409] * (THREADS - 1)
            usages = client.call("GET", f"/resource_providers/{host}/usages").body["usages"]
            assert usages == {"VCPU": 1}
        client.close()


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", ROUNDS)
def test_racing_creates_of_one_provider_name_through_two_servers(rounds: int) -> None:
    """Eight clients create a provider of one name at once through two server processes
    on one PostgreSQL store: the name's stream lets exactly one in (200), the others get
    Placement's 409 ``placement.duplicate_name``; one provider holds the name."""
    with postgres_schema_url() as url, running_server(url) as first, \
            running_server(url) as second:
        client = Client(first)
        for _ in range(rounds // 4):
            name = f"raced-{uuid4()}"

            def create(c: Client, _: int, name: str = name) -> Answer:
                return c.call("POST", "/resource_providers", {"name": name}, LATEST)

            answers = _race([first, second], create)
            assert sorted(a.status for a in answers) == [200] + [409] * (THREADS - 1)
            assert {a.code for a in answers if a.status == 409} == {
                "placement.duplicate_name"}
            listed = client.call("GET", f"/resource_providers?name={name}",
                                 version=LATEST).body
            assert len(listed["resource_providers"]) == 1
        client.close()
