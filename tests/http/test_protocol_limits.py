"""The head limit and the early answers of ``LimitedHttpToolsProtocol`` (``http/limits.py``)
against a real server, with raw sockets: heads split across reads, pipelining, framing,
answers given before a body, and what must still be served as uvicorn serves it."""

from __future__ import annotations

import re
import socket
import time

AUTH = b"X-Auth-Token: secret-admin\r\n"
BIG = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 70_000 + b"\r\n\r\n"
UUID = b"7f6c3b0e-8f1e-4c9a-9a55-3d2b7a0c1e1"


def _talk(port: int, *parts: bytes, pause: float = 0.3, timeout: float = 8) -> bytes:
    """Send ``parts`` apart (``pause`` between them); all received until close/timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        for i, part in enumerate(parts):
            if i:
                time.sleep(pause)
            sock.sendall(part)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
    return received


def _statuses(received: bytes) -> list[int]:
    return [int(s) for s in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]


def _post(length: int, extra: bytes = b"") -> bytes:
    return (b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n" + AUTH + extra
            + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % length)


def test_a_head_split_before_a_large_body_is_not_refused(limited_port: int) -> None:
    """The head's second read holds its end and 100 KB of pipelined requests: not 431."""
    one = b"GET / HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n"
    last = one.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    got = _talk(limited_port, b"GET / HTTP/1.1\r\nHost: x\r\n", AUTH + b"\r\n" + one * 1500 + last)
    assert _statuses(got) == [200] * 1502, _statuses(got)[:3]


def test_a_long_first_header_trickled_is_431_not_414(limited_port: int) -> None:
    got = _talk(limited_port, b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 1000, b"a" * 70_000)
    assert _statuses(got) == [431]


def test_a_refused_head_is_answered_once(limited_port: int) -> None:
    """431, then bytes the parser rejects in the same read: no second (400) answer."""
    assert _statuses(_talk(limited_port, BIG + b"garbage\x01\r\n\r\n")) == [431]


def test_an_answer_given_before_the_body_says_it_closes(limited_port: int) -> None:
    """413 before the body was read ends the connection: the answer must say so."""
    got = _talk(limited_port, _post(3000) + b"n" * 100)
    assert _statuses(got) == [413]
    assert b"connection: close" in got.partition(b"\r\n\r\n")[0].lower()


def test_a_pipelined_request_whose_body_is_still_coming_is_answered(limited_port: int) -> None:
    body = b'{"name": "p-x", "uuid": "%s2"}' % UUID
    got = _talk(limited_port, b"GET / HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n"
                + _post(len(body), b"Connection: close\r\n") + body[:10], body[10:])
    assert _statuses(got) == [200, 201]


def test_many_tiny_headers_count_their_framing(limited_port: int) -> None:
    """160 KB of head in one read ('a:' headers, 1 byte counted of 4 sent): over 64 KiB."""
    got = _talk(limited_port, b"GET / HTTP/1.1\r\nHost: x\r\n" + AUTH + b"a:\r\n" * 40_000
                + b"Connection: close\r\n\r\n")
    assert _statuses(got) == [431]


def test_a_head_sent_byte_by_byte_is_served(limited_port: int) -> None:
    head = b"GET / HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Connection: close\r\n\r\n"
    assert _statuses(_talk(limited_port, *[bytes([b]) for b in head], pause=0.001)) == [200]


def test_a_refused_expect_100_continue_is_answered_without_100(limited_port: int) -> None:
    got = _talk(limited_port, b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nContent-Length: 500"
                b"\r\nExpect: 100-continue\r\n\r\n")
    assert _statuses(got) == [401]


def test_head_and_http_1_0_after_it(limited_port: int) -> None:
    got = _talk(limited_port, b"HEAD / HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\nGET / HTTP/1.0\r\n"
                + AUTH + b"\r\n")
    assert _statuses(got) == [200, 200]
    assert got.split(b"\r\n\r\n")[1].startswith(b"HTTP/1.1 200")  # HEAD: no body
