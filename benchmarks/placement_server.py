"""Serve OpenStack Placement 16 on 127.0.0.1:PORT over the database CONNECTION.

    .venv-placement/bin/python -P benchmarks/placement_server.py PORT CONNECTION

(``-P``: this folder on ``sys.path`` would hide the standard library's ``http``.)

Runs inside Placement's own venv (its pins conflict with the ledger's). The schema comes
from Placement's migrations (``sync_on_startup``, with its standard resource classes and
traits), authentication is its ``noauth2``, every other option Placement's default (no
``max_allocation_candidates``, no randomisation). One request at a time (wsgiref), until
killed. For PostgreSQL, CONNECTION is ``postgresql+psycopg://...`` (psycopg 3 on
``PYTHONPATH``: Placement's venv has no PostgreSQL driver of its own).
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from oslo_config import cfg
from placement import conf, db_api, deploy  # type: ignore[import-not-found]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


def make_app(connection: str) -> Any:
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
    port, connection = int(sys.argv[1]), sys.argv[2]
    app = make_app(connection)
    with make_server("127.0.0.1", port, app, handler_class=QuietHandler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
