"""``allocation-ledger serve``: the Placement-compatible HTTP API (needs the ``http``
extra)."""

from __future__ import annotations

import argparse

from allocation_ledger.cli.options import non_negative_float, positive_int

NAME = "serve"
HELP = "serve a Placement-compatible HTTP API over the ledger"
EXAMPLES = """\
  allocation-ledger serve                                   # 127.0.0.1:8778, no token
  allocation-ledger serve --bind 0.0.0.0:8778 --token-file /etc/ledger/tokens
  allocation-ledger serve --workers 2                        # one process per core
  allocation-ledger serve --log-format json 2>> /var/log/ledger.jsonl   # one object a line
  allocation-ledger serve --bind 0.0.0.0:8778 --auth keystone --auth-config placement.conf
  allocation-ledger serve --auth noauth2 --policy-defaults legacy   # Placement's test auth
  curl -s http://127.0.0.1:8778/metrics                     # Prometheus' text format
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``serve [--bind HOST:PORT] [--token-file FILE] [--auth local|noauth2|keystone]
    [--auth-config FILE] [--policy-file FILE] [--policy-defaults secure|legacy]
    [--log-level LEVEL]
    [--log-format text|json] [--no-access-log] [--stale-after SECONDS]
    [--group-commit on|off] [--workers N] [--loop auto|asyncio|uvloop]
    [--cors-allowed-origin ORIGIN]... [--cors-allow-header HEADER]...``."""
    parser.add_argument("--bind", default="127.0.0.1:8778", help="HOST:PORT (127.0.0.1:8778)")
    parser.add_argument("--token-file", default=None,
                        help="lines of 'TOKEN NAME ROLE' (admin or reader); required off "
                             "loopback")
    parser.add_argument("--auth", default="local", choices=["local", "noauth2", "keystone"],
                        help="local: the token file (without one, the anonymous admin on "
                             "loopback); keystone: keystonemiddleware's auth_token; noauth2: "
                             "Placement's test authentication (loopback only). keystone and "
                             "noauth2 enforce Placement's policy")
    parser.add_argument("--auth-config", default=None, metavar="FILE",
                        help="--auth keystone: an ini file with [keystone_authtoken] (as "
                             "placement.conf) or a paste [filter:authtoken] section")
    parser.add_argument("--policy-file", default=None, metavar="FILE",
                        help="Placement policy overrides (oslo.policy YAML or JSON)")
    parser.add_argument("--policy-defaults", default="secure", choices=["secure", "legacy"],
                        help="Placement's secure-RBAC defaults (enforce_new_defaults) or "
                             "the legacy ones that also accept role:admin (secure)")
    parser.add_argument("--max-body-bytes", type=positive_int, default=1024 * 1024, metavar="N",
                        help="refuse request bodies larger than N bytes with 413 (1 MiB)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"],
                        help="log on stderr from this level (info: with the access log)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="every log line as text or as one JSON object (text)")
    parser.add_argument("--stale-after", type=non_negative_float, default=3600.0,
                        metavar="SECONDS",
                        help="/metrics: a migration in flight this long counts as stale "
                             "(default 3600)")
    parser.add_argument("--group-commit", default="on", choices=["on", "off"],
                        help="commands that arrive together share one append (on)")
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="N server processes on the one address, each with its own "
                             "connections to the store (1)")
    parser.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"],
                        help="the event loop: uvloop where it is installed (auto), or "
                             "asyncio's own")
    parser.add_argument("--cors-allowed-origin", action="append", default=[], metavar="ORIGIN",
                        help="allow cross-origin requests from ORIGIN ('*': any), as "
                             "Placement's [cors] allowed_origin (repeatable; default: none)")
    parser.add_argument("--cors-allow-header", action="append", default=[], metavar="HEADER",
                        help="a request header cross-origin requests may send, as "
                             "Placement's [cors] allow_headers (repeatable)")
    parser.add_argument("--no-access-log", dest="access_log", action="store_false",
                        help="no line per request (the request metrics are still kept)")


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM."""
    from allocation_ledger.http.server import AuthSettings, serve

    auth = AuthSettings(args.auth, args.auth_config, args.policy_file, args.policy_defaults)
    serve(args.url, args.bind, args.token_file, args.log_level, args.max_body_bytes,
          log_format=args.log_format, access_log=args.access_log,
          stale_after=args.stale_after, auth=auth, group_commit=args.group_commit == "on",
          cors_origins=args.cors_allowed_origin, cors_allow_headers=args.cors_allow_header,
          workers=args.workers, loop=args.loop)
    return 0
