"""Watching a real ``allocation-ledger serve``: its ``GET /metrics`` parsed by
prometheus_client's own parser (commands, refusals by kind, append and request latency
histograms, head, projection lag), its access log read back from its stderr as text and,
with ``--log-format json``, as one JSON object a line; and a server that logs every
request keeps answering (its harness never lets a pipe fill)."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.http.server import Client, running_server
from tests.http.world import claim, inventory, provider

ADMIN, READER = "secret-admin", "secret-read"
TEXT_LINE = re.compile(
    r"^\S+ \S+ INFO allocation_ledger\.access: (?P<client>\S+) (?P<method>[A-Z]+) "
    r"(?P<path>\S+) (?P<status>\d{3}) (?P<ms>[\d.]+)ms (?P<request_id>\S+) (?P<caller>\S+)$")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass(frozen=True)
class Watched:
    """A server process: its port and the file its stdout and stderr go to."""

    port: int
    log: Path

    def lines(self) -> list[str]:
        """The lines it has logged so far."""
        return self.log.read_text().splitlines()


@pytest.fixture(scope="module")
def json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    """A server over SQLite with an admin and a reader token, logging JSON."""
    folder = tmp_path_factory.mktemp("watched")
    tokens = folder / "tokens"
    tokens.write_text(f"{ADMIN} nova admin\n{READER} prometheus reader\n")
    log = folder / "server.log"
    with running_server(f"sqlite:///{folder / 'ledger.db'}", str(tokens),
                        args=["--log-format", "json", "--stale-after", "600"],
                        output=log) as port:
        yield Watched(port, log)


@pytest.fixture(scope="module")
def text_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    """A server over SQLite without tokens, logging text (the default)."""
    folder = tmp_path_factory.mktemp("watched-text")
    log = folder / "server.log"
    with running_server(f"sqlite:///{folder / 'ledger.db'}", output=log) as port:
        yield Watched(port, log)


def scrape(port: int, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """``GET /metrics``: the status and the text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", "/metrics", headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def samples(text: str) -> Samples:
    """Every sample of an exposition, read by prometheus_client's parser."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when the series does not exist yet)."""
    return found.get((name, frozenset(labels.items())), 0.0)


def scraped(port: int) -> Samples:
    """The metrics, scraped as Prometheus would with a reader's bearer token."""
    status, text = scrape(port, {"Authorization": f"Bearer {READER}"})
    assert status == 200, text
    return samples(text)


def logged(server: Watched, request_id: str, timeout: float = 10.0) -> list[str]:
    """The log lines naming ``request_id``, once there is one (a line is written just
    after its response is sent)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [line for line in server.lines() if request_id in line]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def request_id() -> str:
    """A well-formed request id, which the server keeps."""
    return f"req-{uuid4()}"


def test_the_metrics_count_commands_refusals_and_requests(json_server: Watched) -> None:
    admin = Client(json_server.port, ADMIN)
    before = scraped(json_server.port)
    host = provider(admin, f"host-{uuid4().hex[:8]}")
    inventory(admin, host, VCPU=2)
    assert claim(admin, str(uuid4()), host, VCPU=2) == 204
    assert claim(admin, str(uuid4()), host, VCPU=1) == 409  # no room: refused
    after = scraped(json_server.port)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("ledger_commands_total") == 3  # registered, inventory set, claimed
    assert moved("ledger_refusals_total", kind="InsufficientCapacity") == 1
    assert moved("ledger_append_seconds_count") == 3
    assert moved("ledger_append_seconds_sum") > 0
    route = "/allocations/{consumer_uuid}"
    for status in ("204", "409"):
        assert moved("ledger_http_request_seconds_count", method="PUT", route=route,
                      status=status) == 1
        assert moved("ledger_http_request_seconds_bucket", method="PUT", route=route,
                     status=status, le="+Inf") == 1
    assert moved("ledger_http_request_seconds_count", method="POST",
                 route="/resource_providers", status="200") == 1
    head = value(after, "ledger_head_position")
    assert head > value(before, "ledger_head_position")
    lag = value(after, "ledger_projection_lag_events", projection="allocations")
    position = value(after, "ledger_projection_position", projection="allocations")
    assert lag == head - position and lag > 0  # nothing read the projections since
    assert value(after, "ledger_migrations_in_flight") == 0
    assert ("ledger_stale_migrations", frozenset()) in after


def test_metrics_need_a_known_token_of_any_role(json_server: Watched) -> None:
    status, text = scrape(json_server.port)
    assert status == 401
    assert json.loads(text)["errors"][0]["status"] == 401
    assert scrape(json_server.port, {"Authorization": "Bearer wrong"})[0] == 401
    assert scrape(json_server.port, {"X-Auth-Token": READER})[0] == 200
    assert scrape(json_server.port, {"X-Auth-Token": ADMIN})[0] == 200
    refused = Client(json_server.port, ADMIN).call("POST", "/metrics", {})
    assert (refused.status, refused.headers["allow"]) == (405, "GET")


def test_every_json_log_line_is_an_object_and_the_access_lines_say_who(
        json_server: Watched) -> None:
    admin = Client(json_server.port, ADMIN)
    host = provider(admin, f"host-{uuid4().hex[:8]}")
    inventory(admin, host, VCPU=1)
    sent, consumer = request_id(), str(uuid4())
    refused = admin.call("PUT", f"/allocations/{consumer}", {
        "allocations": {host: {"resources": {"VCPU": 2}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}, "1.39",
        headers={"X-Openstack-Request-Id": sent})
    assert refused.status == 409
    denied = request_id()
    assert Client(json_server.port, "wrong").call(
        "GET", "/resource_providers", headers={"X-Openstack-Request-Id": denied}).status == 401
    assert logged(json_server, sent) and logged(json_server, denied)
    records = [json.loads(line) for line in json_server.lines()]  # every line: one object
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["logger"] == "uvicorn.error" for r in records)  # uvicorn's lines too
    [access] = [r for r in records if r.get("request_id") == sent]
    assert access["logger"] == "allocation_ledger.access" and access["level"] == "INFO"
    assert (access["method"], access["path"], access["status"], access["caller"]) == (
        "PUT", f"/allocations/{consumer}", 409, "nova")
    assert access["duration_ms"] > 0 and access["client"].startswith("127.0.0.1:")
    [anonymous] = [r for r in records if r.get("request_id") == denied]
    assert (anonymous["status"], anonymous["caller"]) == (401, "-")


def test_text_access_lines_name_method_path_status_duration_id_and_caller(
        text_server: Watched) -> None:
    client = Client(text_server.port)
    listed, unknown = request_id(), request_id()
    assert client.call("GET", "/resource_providers?name=x",
                       headers={"X-Openstack-Request-Id": listed}).status == 200
    assert client.call("GET", f"/no/such/{uuid4()}",
                       headers={"X-Openstack-Request-Id": unknown}).status == 404
    [line] = logged(text_server, listed)
    found = TEXT_LINE.match(line)
    assert found is not None, line
    assert found.group("method", "path", "status", "request_id", "caller") == (
        "GET", "/resource_providers?name=x", "200", listed, "anonymous")
    assert float(found.group("ms")) > 0
    [line] = logged(text_server, unknown)
    found = TEXT_LINE.match(line)
    assert found is not None and found.group("status", "caller") == ("404", "-")
    # a path no route serves is one series, whatever the path was
    after = scraped(text_server.port)
    assert value(after, "ledger_http_request_seconds_count", method="GET",
                 route="unmatched", status="404") >= 1


def test_a_server_that_logs_every_request_keeps_answering(text_server: Watched) -> None:
    """About 200 bytes a line: 1000 requests write far more than a pipe holds (64 KiB), so
    a harness that does not drain the server's stderr would block it here."""
    client = Client(text_server.port)
    for _ in range(1000):
        assert client.call("GET", "/").status == 200
    last = request_id()
    assert client.call("GET", "/", headers={"X-Openstack-Request-Id": last}).status == 200
    assert logged(text_server, last)
    assert text_server.log.stat().st_size > 128 * 1024


@pytest.mark.parametrize("args", [["--no-access-log"], ["--log-level", "warning"]])
def test_the_access_log_can_be_left_out(tmp_path: Path, args: list[str]) -> None:
    log = tmp_path / "server.log"
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}", args=args,
                        output=log) as port:
        sent = request_id()
        assert Client(port).call("GET", "/", headers={"X-Openstack-Request-Id": sent}
                                 ).status == 200
        found = scraped(port)  # the request is still timed
        time.sleep(0.5)
        assert sent not in log.read_text()
    assert value(found, "ledger_http_request_seconds_count", method="GET", route="/",
                 status="200") == 1
    if args == ["--no-access-log"]:
        assert "Uvicorn running on" in log.read_text()  # the other lines are still there


def test_a_json_error_line_with_its_traceback_is_one_object_on_one_line() -> None:
    """The formatter the server's logging config builds (not applied here: the test run's
    own logging stays as it is), given an application's error with a traceback."""
    import logging
    import logging.config
    import sys

    from allocation_ledger.http import logs

    settings = logs.config("info", "json")["formatters"]["line"]
    formatter = logging.config.DictConfigurator({}).configure_formatter(settings)
    try:
        raise RuntimeError("the store went away\nmid-request")
    except RuntimeError:
        record = logging.LogRecord("allocation_ledger.http.context", logging.ERROR, __file__,
                                   1, "request %s failed", ("req-1",), sys.exc_info())
    line = formatter.format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "ERROR", "allocation_ledger.http.context", "request req-1 failed")
    assert "RuntimeError: the store went away" in entry["exc_info"]
    assert entry["time"].endswith("+00:00")


@pytest.mark.parametrize(("status", "headers", "body", "counted_at"), [
    (200, [(b"content-length", b"2")], b"{}", [None, 1.0]),  # at the end of its body
    (204, [], b"", [1.0, 1.0]),  # a 204 is whole at its head: counted before it
    (200, [(b"content-length", b"0")], b"", [1.0, 1.0]),
])
def test_a_request_is_counted_before_the_end_of_its_answer_goes_out(
        status: int, headers: list[tuple[bytes, bytes]], body: bytes,
        counted_at: list[float | None]) -> None:
    """The request's observation comes before the last part of its response is sent, so a
    client that has its answer and asks ``GET /metrics`` (of any worker) finds it. The
    server writes a response's head as soon as it is sent, so an answer with no body is
    counted before its head goes out: a client has a 204 whole from its head alone."""
    import asyncio

    from prometheus_client import CollectorRegistry

    from allocation_ledger.http.observe import Observed, Templates
    from allocation_ledger.metrics import RequestMetrics

    registry = CollectorRegistry()
    labels = {"method": "PUT", "route": "/allocations/{consumer_uuid}",
              "status": str(status)}
    counted_when_sent: list[float | None] = []

    async def app(scope: object, receive: object, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def send(message: dict[str, Any]) -> None:
        counted_when_sent.append(
            registry.get_sample_value("ledger_http_request_seconds_count", labels))

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    observed = Observed(app, Templates(["/allocations/{consumer_uuid}"]),
                        RequestMetrics(registry))
    scope = {"type": "http", "method": "PUT", "path": "/allocations/x", "query_string": b""}
    asyncio.run(observed(scope, receive, send))  # type: ignore[arg-type]
    assert counted_when_sent == counted_at
    assert registry.get_sample_value("ledger_http_request_seconds_count", labels) == 1.0


def test_a_client_gone_before_its_body_is_no_error_and_logged_as_499(
        json_server: Watched) -> None:
    """A client that closes its connection before sending the body it announced is not a
    server failure: no ERROR line, no traceback, and its access line says 499 (as nginx
    logs a request its client closed), not 500."""
    request_id = f"req-{uuid4()}"
    with socket.create_connection(("127.0.0.1", json_server.port), timeout=10) as sock:
        sock.sendall(b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: "
                     + ADMIN.encode() + b"\r\nContent-Type: application/json\r\n"
                     b"X-OpenStack-Request-ID: " + request_id.encode() + b"\r\n"
                     b"Content-Length: 1000\r\n\r\n" + b'{"name": ')
    def lines_of_the_request() -> list[dict[str, object]]:
        return [json.loads(line) for line in json_server.lines() if request_id in line]

    deadline = time.monotonic() + 10
    mine = lines_of_the_request()
    while not any(r["logger"] == "allocation_ledger.access" for r in mine):
        assert time.monotonic() < deadline, f"no access line for the request: {mine}"
        time.sleep(0.05)
        mine = lines_of_the_request()
    assert {r["level"] for r in mine} == {"INFO"}, mine
    assert [r["status"] for r in mine if r["logger"] == "allocation_ledger.access"] == [499]
