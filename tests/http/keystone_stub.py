"""A small stand-in for Keystone's v3 token API, enough for ``keystonemiddleware``'s
``auth_token``: the service user's password login (``POST /v3/auth/tokens``) and the
validation of a user's token (``GET /v3/auth/tokens`` with ``X-Subject-Token``), with the
version document keystoneauth discovers first. Tokens are given by the test: token ->
(user, project, roles)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVICE_TOKEN = "service-token"


def _token(user: str, project: str, roles: list[str], base: str = "") -> dict[str, Any]:
    now = datetime.now(UTC)
    domain = {"id": "default", "name": "Default"}
    return {"token": {
        "methods": ["password"], "audit_ids": ["a"],
        "issued_at": now.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "expires_at": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "user": {"id": user, "name": user, "domain": domain},
        "project": {"id": project, "name": project, "domain": domain},
        "roles": [{"id": r, "name": r} for r in roles],
        "catalog": [{"type": "identity", "name": "keystone", "id": "identity", "endpoints": [
            {"id": i, "interface": i, "region": "RegionOne", "region_id": "RegionOne",
             "url": base + "/v3"} for i in ("public", "internal", "admin")]}] if base else []}}


@contextmanager
def keystone(tokens: dict[str, tuple[str, str, list[str]]]) -> Iterator[str]:
    """Serve the stand-in on a free port of 127.0.0.1; yields its URL."""
    seen: list[str] = []

    class KeystoneRequests(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None
                  ) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{self.server.server_port}"
            if self.path.rstrip("/") in ("", "/v3"):
                version = {"id": "v3.14", "status": "stable", "updated": "2020-01-01T00:00:00Z",
                           "links": [{"rel": "self", "href": base + "/v3/"}],
                           "media-types": [{"base": "application/json",
                                            "type": "application/vnd.openstack.identity-v3+json"}]}
                body = ({"version": version} if self.path.startswith("/v3")
                        else {"versions": {"values": [version]}})
                self._send(200, body)
            elif self.path.startswith("/v3/auth/tokens"):
                subject = self.headers.get("X-Subject-Token", "")
                seen.append(subject)
                if self.headers.get("X-Auth-Token") != SERVICE_TOKEN:
                    self._send(401, {"error": {"code": 401}})
                elif subject in tokens:
                    self._send(200, _token(*tokens[subject]),
                               {"X-Subject-Token": subject})
                else:
                    self._send(404, {"error": {"code": 404, "message": "not found"}})
            else:
                self._send(404, {})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.startswith("/v3/auth/tokens"):
                base = f"http://127.0.0.1:{self.server.server_port}"
                self._send(201, _token("placement", "service", ["service"], base),
                           {"X-Subject-Token": SERVICE_TOKEN})
            else:
                self._send(404, {})

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeystoneRequests)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
