"""Serve OpenStack Placement 16 itself on 127.0.0.1:PORT, over a fresh SQLite database.

    .venv-placement/bin/python tests/gabbits/placement_server.py PORT DBFILE [SETUP]

The control for the gabbit harness: the same runner and the same data fixtures (rebuilt by
HTTP) run against Placement's own API show that a test fails because of the server under
test, not because of the harness. Placement's schema comes from its migrations
(``sync_on_startup``), authentication is its ``noauth2``, and SETUP configures it as the
fixture of Placement's own gabbit module does: ``legacy`` (the default: the deprecated
policy rules, ``enforce_new_defaults = false``), ``secure`` (the secure-RBAC defaults),
``open`` (every rule but ``admin_api`` open to any caller) or ``cors`` (CORS for
``http://valid.example.com``). Runs inside ``.venv-placement``; one request at a time
(wsgiref), until killed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from wsgiref.simple_server import WSGIRequestHandler, make_server

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from placement import conf, db_api, deploy, policies


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


def settings(setup: str, folder: str) -> str:
    """The configuration file's sections beyond the database and noauth2, for SETUP."""
    secure = "true" if setup == "secure" else "false"
    text = f"[oslo_policy]\nenforce_new_defaults = {secure}\n"
    if setup == "open":
        rules = {rule.name: "@" for rule in policies.list_rules() if rule.name != "admin_api"}
        path = os.path.join(folder, "policy.json")
        with open(path, "w") as file:
            json.dump(rules, file)
        text += f"policy_file = {path}\n"
    if setup == "cors":
        text += ("[cors]\nallowed_origin = http://valid.example.com\n"
                 "allow_headers = openstack-api-version\n")
    return text


def make_app(connection: str, setup: str, folder: str):  # type: ignore[no-untyped-def]
    config = cfg.ConfigOpts()
    conf.register_opts(config)
    policy_opts.set_defaults(config)
    path = os.path.join(folder, "placement.conf")
    with open(path, "w") as file:
        file.write(f"[placement_database]\nconnection = {connection}\n"
                   "sync_on_startup = true\n[api]\nauth_strategy = noauth2\n"
                   + settings(setup, folder))
    config([], project="placement", default_config_files=[path])
    db_api.configure(config)
    return deploy.loadapp(config)


def main() -> None:
    port, database = int(sys.argv[1]), sys.argv[2]
    setup = sys.argv[3] if len(sys.argv) > 3 else "legacy"
    folder = tempfile.mkdtemp()
    app = make_app(f"sqlite:///{database}", setup, folder)
    with make_server("127.0.0.1", port, app, handler_class=QuietHandler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
