"""A real server process on a free port of 127.0.0.1, and a small HTTP client for it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allocation_ledger.http.server import spawned

VERSION_HEADER = "OpenStack-API-Version"


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
            sent.setdefault("Content-Type", "application/json")
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


def running_server(url: str, token_file: str | None = None, max_body: int | None = None,
                   args: Sequence[str] = (), output: Path | None = None
                   ) -> AbstractContextManager[int]:
    """``allocation-ledger serve`` over ``url`` (and ``args``) as a child process; yields its
    port. Its stdout and stderr (the logs) go to the file ``output`` when given."""
    return spawned(url, token_file, max_body=max_body, args=args, output=output)
