"""Placement 16 as an HTTP service on a free port of 127.0.0.1, for Nova's client.

Run with a Python that has ``openstack-placement`` installed (``.venv-placement``), as
``placement_server.py CONNECTION``: Placement's WSGI application (schema from its
migrations, ``auth_strategy = noauth2``) served by ``wsgiref`` until killed. Prints the
port on its first line once it listens.
"""

from __future__ import annotations

import sys
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "placement"))

from fill_placement import make_app  # type: ignore[import-not-found]


class Quiet(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def main(connection: str) -> None:
    app = make_app(connection)

    def admin(environ, start_response):  # type: ignore[no-untyped-def]
        environ["HTTP_X_AUTH_TOKEN"] = "admin"  # keystoneauth's NoAuth sends "notused"
        environ["HTTP_X_ROLES"] = "admin,service,member,reader"  # as Nova's service user
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, admin, handler_class=Quiet)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
