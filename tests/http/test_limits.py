"""The server's hardening (issue 27, item 9): odd tokens, absurd query values, and requests
larger than it reads are answered (401, 400, 413, 414, 431), never a 500 or a reset."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from uuid import uuid4

import pytest

from tests.http.conftest import LIMITED_MAX_BODY as MAX_BODY
from tests.http.server import Client, running_server


def _raw(port: int, request: bytes) -> tuple[int, dict[str, object]]:
    """Send ``request`` whole on a new connection; the status and JSON body answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


@pytest.mark.parametrize("token", ["sécret", "секрет", "\u00ff" * 40])
def test_a_token_that_is_not_ascii_is_refused_not_a_crash(limited_port: int,
                                                          token: str) -> None:
    client = Client(limited_port)
    answer = client.call("GET", "/resource_providers",
                         headers={"X-Auth-Token": token.encode("utf-8")})  # type: ignore[dict-item]
    assert answer.status == 401, answer


@pytest.mark.parametrize("value", ["1e300", "inf", "nan", "-1", "-inf"])
def test_an_absurd_stale_after_is_a_bad_request(limited_port: int, value: str) -> None:
    answer = Client(limited_port, "secret-admin").call(
        "GET", f"/ledger/audit?stale_after={value}")
    assert answer.status == 400, answer
    assert "stale_after" in answer.body["errors"][0]["detail"]


def test_a_body_beyond_the_limit_is_413_and_read_only_when_authenticated(
        limited_port: int) -> None:
    uuid = str(uuid4())
    big = {"name": "n" * (MAX_BODY + 10), "uuid": uuid}
    assert Client(limited_port).call("POST", "/resource_providers", big).status == 401
    refused = Client(limited_port, "secret-admin").call("POST", "/resource_providers", big)
    assert refused.status == 413, refused
    assert str(MAX_BODY) in refused.body["errors"][0]["detail"]
    small = {"name": f"n-{uuid}", "uuid": uuid}
    assert Client(limited_port, "secret-admin").call(
        "POST", "/resource_providers", small, "1.20").status == 200


def test_a_streamed_body_beyond_the_limit_is_413(limited_port: int) -> None:
    chunk = b"x" * 1000
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3)) + b"0\r\n\r\n"
    status, body = _raw(limited_port, b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n"
                        b"X-Auth-Token: secret-admin\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks)
    assert status == 413, body


def test_a_very_long_url_is_414(limited_port: int) -> None:
    status, body = _raw(limited_port, b"GET /resource_providers?name=" + b"a" * 1_000_000
                        + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414
    assert body["errors"][0]["status"] == 414  # type: ignore[index]


def test_huge_headers_are_431(limited_port: int) -> None:
    status, body = _raw(limited_port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: "
                        + b"b" * 200_000 + b"\r\n\r\n")
    assert status == 431, body


@pytest.mark.parametrize(("token", "status"), [(b"", 401), (b"X-Auth-Token: secret-admin\r\n",
                                                           413)])
def test_a_large_body_is_answered_not_reset(limited_port: int, token: bytes,
                                            status: int) -> None:
    """3 MB sent whole: the server answers without reading it and drops the rest before
    closing, so the client reads the answer."""
    body = b'{"name": "' + b"n" * 3_000_000 + b'"}'
    got, _ = _raw(limited_port, b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n" + token
                  + b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\n\r\n" % len(body) + body)
    assert got == status


def test_a_kept_alive_connection_answered_before_its_body_is_closed_after_the_answer(
        limited_port: int) -> None:
    """Without ``Connection: close``, a 413 given before the body was read still ends the
    connection (after the answer): the server does not read a body nobody wants to find
    the next request."""
    body = b'{"name": "' + b"n" * 300_000 + b'"}'
    with socket.create_connection(("127.0.0.1", limited_port), timeout=30) as sock:
        sock.sendall(b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n"
                     b"X-Auth-Token: secret-admin\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        received = b""
        while chunk := sock.recv(65536):  # ends when the server closes
            received += chunk
    assert received.startswith(b"HTTP/1.1 413 "), received[:100]
    assert received.count(b"HTTP/1.1 ") == 1


def test_pipelined_requests_on_one_connection_are_each_answered(limited_port: int) -> None:
    one = b"GET / HTTP/1.1\r\nHost: x\r\nX-Auth-Token: secret-admin\r\n\r\n"
    with socket.create_connection(("127.0.0.1", limited_port), timeout=30) as sock:
        sock.sendall(one * 3 + one.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 4, received[:300]


def test_a_large_body_in_one_read_does_not_count_as_the_next_head(tmp_path: Path) -> None:
    """A body of more than the head's limit (64 KiB), read in the same chunk as its head,
    is that request's, not the start of an oversized next one: the request is answered, and
    the connection serves the next request."""
    body = b'{"name": "n-%s", "uuid": "%s"}' % ((str(uuid4()).encode(),) * 2)
    body += b" " * 100_000  # JSON's whitespace: a body of 100 KB
    request = (b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
               + body)
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}") as port, \
            socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    statuses = [line.split(b" ")[1] for line in received.split(b"\r\n")
                if line.startswith(b"HTTP/1.1 ")]
    assert statuses == [b"201", b"200"], received[:400]
