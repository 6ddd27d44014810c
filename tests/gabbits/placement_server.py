"""Serve OpenStack Placement 16 itself on 127.0.0.1:PORT, over a fresh SQLite database.

    .venv-placement/bin/python tests/gabbits/placement_server.py PORT DBFILE

The control for the gabbit harness: the same runner and the same data fixtures (rebuilt by
HTTP) run against Placement's own API show that a test fails because of the server under
test, not because of the harness. Placement's schema comes from its migrations
(``sync_on_startup``), authentication is its ``noauth2`` (as in its own gabbit fixture),
policy its defaults (the legacy rules). Runs inside ``.venv-placement``; one request at a
time (wsgiref), until killed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from wsgiref.simple_server import WSGIRequestHandler, make_server

from oslo_config import cfg
from placement import conf, db_api, deploy


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


def make_app(connection: str):  # type: ignore[no-untyped-def]
    config = cfg.ConfigOpts()
    conf.register_opts(config)
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as file:
        file.write(f"[placement_database]\nconnection = {connection}\n"
                   "sync_on_startup = true\n[api]\nauth_strategy = noauth2\n")
    try:
        config([], project="placement", default_config_files=[file.name])
        db_api.configure(config)
        return deploy.loadapp(config)
    finally:
        os.unlink(file.name)


def main() -> None:
    port, database = int(sys.argv[1]), sys.argv[2]
    app = make_app(f"sqlite:///{database}")
    with make_server("127.0.0.1", port, app, handler_class=QuietHandler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
