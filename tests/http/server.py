"""A real server process on a free port of 127.0.0.1, and a small HTTP client for it."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

VERSION_HEADER = "OpenStack-API-Version"


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Answer:
    """One response: status, JSON body (``None`` when empty) and headers (lower-case)."""

    status: int
    body: Any
    headers: dict[str, str]

    @property
    def code(self) -> str | None:
        """Placement's error code, when the body is an error document."""
        if isinstance(self.body, dict) and self.body.get("errors"):
            return str(self.body["errors"][0]["code"])
        return None


@dataclass
class Client:
    """A keep-alive HTTP client (one connection: use one client per thread)."""

    port: int
    token: str | None = None
    conn: http.client.HTTPConnection | None = field(default=None, repr=False)

    def call(self, method: str, path: str, body: Any = None, version: str | None = None,
             headers: dict[str, str] | None = None) -> Answer:
        """Send one request; ``version`` goes in the microversion header."""
        sent = dict(headers or {})
        if version is not None:
            sent[VERSION_HEADER] = f"placement {version}"
        if self.token is not None:
            sent["X-Auth-Token"] = self.token
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                self.conn.request(method, path, payload, sent)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        return Answer(response.status, json.loads(raw) if raw else None,
                      {k.lower(): v for k, v in response.getheaders()})

    def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            self.conn.close()


@contextmanager
def running_server(url: str, token_file: str | None = None) -> Iterator[int]:
    """``allocation-ledger serve`` over ``url`` as a child process; yields its port."""
    port = free_port()
    argv = [sys.executable, "-c", "from allocation_ledger.cli import main; "
            "raise SystemExit(main())", "serve", "--url", url, "--bind", f"127.0.0.1:{port}"]
    if token_file is not None:
        argv += ["--token-file", token_file]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(proc, port)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


def _wait_until_up(proc: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not come up in {timeout} s")
